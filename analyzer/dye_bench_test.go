package analyzer

import (
	"fmt"
	"testing"
	"time"

	"github.com/driftback/driftback/internal/synth"
)

// BenchmarkDyeWidth is what the dyed build costs next to a plain render of
// the same root, timed root by root in the same op (the machine's swings
// hit both sides alike): x-render is dye time ÷ render time. values=false
// dyes the images:/replicas: entries only (the dye before provenance);
// values=true also every patch value, label, literal and replacement
// source, and reads and checks where their nonces land.
func BenchmarkDyeWidth(b *testing.B) {
	fx, err := synth.NewRepo(7, 20, 10)
	if err != nil {
		b.Fatal(err)
	}
	var builts []*built
	for _, root := range fx.Roots {
		bt, refs, err := build(fx.Repo, root)
		if err != nil || len(refs) > 0 {
			b.Fatalf("build %s: %v %v", root, err, refs)
		}
		builts = append(builts, bt)
	}
	for _, values := range []bool{false, true} {
		b.Run(fmt.Sprintf("values=%v", values), func(b *testing.B) {
			var render, dyeing time.Duration
			for range b.N {
				for _, bt := range builts {
					t0 := time.Now()
					if _, err := bt.render.render(fx.Repo, bt.tree, nil, bt.files); err != nil {
						b.Fatal(err)
					}
					t1 := time.Now()
					res, err := dyeRoot(fx.Repo, bt, values)
					if err != nil || res.Note != "" || (values && res.Prov == nil) {
						b.Fatalf("dye: %v %q", err, res.Note)
					}
					render, dyeing = render+t1.Sub(t0), dyeing+time.Since(t1)
				}
			}
			b.ReportMetric(float64(dyeing)/float64(render), "x-render")
		})
	}
}
