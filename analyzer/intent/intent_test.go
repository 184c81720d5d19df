package intent_test

import (
	"math/rand/v2"
	"testing"

	"github.com/driftback/driftback/analyzer/intent"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/synth"
)

// TestIntentMatchesIsTheView: the in-sync check that spares building the
// intent view says exactly what comparing the built view says, on live
// objects as the API server returns them (managedFields, defaults) and on
// random edits of them: changed, added and removed fields, list elements
// added, dropped and reordered.
func TestIntentMatchesIsTheView(t *testing.T) {
	fx, err := synth.NewRepo(11, 12, 10)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := fx.Repo.FS()
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	checked, inSync, drifted := 0, 0, 0
	for _, drift := range []float64{0, 0.5} {
		live, _, err := fx.LiveObjects(drift, readLive)
		if err != nil {
			t.Fatal(err)
		}
		for _, root := range fx.Roots {
			rendered, err := synth.Build(fsys, root)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range live[root] {
				ren := matching(rendered, l.Object)
				if ren == nil {
					continue
				}
				for round := range 8 {
					obj := jsonvalue.Copy(jsonvalue.Normalize(l.Object)).(map[string]any)
					if round > 0 {
						perturb(obj, rng)
					}
					fast, built := matchesView(obj, ren, l.Owner)
					if fast != built {
						t.Fatalf("%s round %d: intent.Matches %v, the built view says %v\nlive %v\nren %v", root, round, fast, built, obj, ren)
					}
					// Without managedFields only rendered fields compare.
					if fast, built := matchesView(obj, ren, nil); fast != built {
						t.Fatalf("%s round %d, no ownership: intent.Matches %v, the built view %v", root, round, fast, built)
					}
					checked++
					if fast {
						inSync++
					} else {
						drifted++
					}
				}
			}
		}
	}
	if inSync == 0 || drifted == 0 {
		t.Fatalf("%d checks: %d in sync, %d drifted; both must occur", checked, inSync, drifted)
	}
}

// matchesView is what Matches says of a live object and its render, and
// what comparing the built view with the render says (a field set back
// to the render's value because only the tool wrote it is no match).
func matchesView(live, ren map[string]any, own kube.Ownership) (fast, built bool) {
	view, applied := intent.ViewApplied(live, ren, own)
	return intent.Matches(live, ren, own), len(applied) == 0 && jsonvalue.Equal(view, ren)
}

func readLive(root string, data []byte) ([]kube.LiveObject, error) {
	return cluster.ParseLive(root, data, cluster.DefaultRules())
}

func matching(rendered []map[string]any, live map[string]any) map[string]any {
	meta, _ := live["metadata"].(map[string]any)
	for _, r := range rendered {
		rm, _ := r["metadata"].(map[string]any)
		if r["kind"] == live["kind"] && rm["name"] == meta["name"] {
			return r
		}
	}
	return nil
}

// perturb makes one random edit somewhere in obj.
func perturb(obj map[string]any, rng *rand.Rand) {
	var v any = obj
	for depth := 0; depth < 8; depth++ {
		switch c := v.(type) {
		case map[string]any:
			keys := jsonvalue.SortedKeys(c)
			if len(keys) == 0 || rng.IntN(4) == 0 {
				switch rng.IntN(3) {
				case 0:
					c["added"] = "x"
				case 1:
					if len(keys) > 0 {
						delete(c, keys[rng.IntN(len(keys))])
					}
				default:
					if len(keys) > 0 {
						c[keys[rng.IntN(len(keys))]] = int64(rng.IntN(3))
					}
				}
				return
			}
			v = c[keys[rng.IntN(len(keys))]]
		case []any:
			if len(c) == 0 || rng.IntN(3) == 0 {
				switch {
				case len(c) >= 2 && rng.IntN(2) == 0:
					c[0], c[1] = c[1], c[0]
				case len(c) >= 1 && rng.IntN(2) == 0:
					c[len(c)-1] = map[string]any{"name": "extra", "image": "x"}
				default:
					if len(c) > 0 {
						c[0] = jsonvalue.Copy(c[0])
						if m, ok := c[0].(map[string]any); ok {
							m["name"] = "renamed"
						}
					}
				}
				return
			}
			v = c[rng.IntN(len(c))]
		default:
			return
		}
	}
}
