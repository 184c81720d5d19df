package analyzer

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// A field refused because the build owns it leaves nothing behind in the
// source: the maps it would have needed (data: {} under a patch's key,
// labels: {} under the overlay's labels:) are not written, and the rest of
// the object's edit still is. The overlay that supplies the fields lies
// outside the write scope, so they stay the build's.
func TestRefusedFieldLeavesNothingBehind(t *testing.T) {
	repo := fixture(t, "patchowned")
	note := jsonvalue.ParseSimple("metadata.annotations.note")
	for _, tc := range []struct {
		name  string
		field jsonvalue.Path
		value any
		junk  string // what the base must not get
	}{
		{"patch owns data", jsonvalue.ParseSimple("data.level"), "two", "\ndata:"},
		{"labels owns the label", jsonvalue.ParseSimple("metadata.labels.team"), "red", "\n  labels:"},
	} {
		for _, alsoNote := range []bool{false, true} {
			name := tc.name
			if alsoNote {
				name += ", with a writable field"
			}
			t.Run(name, func(t *testing.T) {
				live := renderedLive(t, repo, "overlay")
				cm := find(t, live, "ConfigMap", "settings")
				set(t, cm, tc.field, tc.value)
				if alsoNote {
					set(t, cm, note, "second")
				}
				p, err := Analyze(Input{Repo: repo, Root: "overlay", Live: asLive(live), Options: Options{WriteScope: "base"}})
				if err != nil {
					t.Fatal(err)
				}
				if len(p.Refusals) != 1 || p.Refusals[0].Code != CodeBuildOwned || p.Refusals[0].Field != tc.field.String() {
					t.Fatalf("want %s refused build-owned:\n%s", tc.field, dump(p))
				}
				if !alsoNote {
					if len(p.Files)+len(p.Edits) != 0 {
						t.Fatalf("the refusal alone was wanted:\n%s", dump(p))
					}
					return
				}
				if len(p.Edits) != 1 || p.Edits[0].Field != note.String() || len(p.Files) != 1 {
					t.Fatalf("want the note edited:\n%s", dump(p))
				}
				if c := p.Files[0].Content; strings.Contains(c, tc.junk) || !strings.Contains(c, "note: second") {
					t.Fatalf("the base got more than the note:\n%s", c)
				}
			})
		}
	}
}
