package config

import "testing"

// FuzzParse checks that no input makes Parse panic, and that a config it
// accepts resolves every target.
func FuzzParse(f *testing.F) {
	f.Add([]byte(base))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("github: {appID: 1}\ntargets: [{name: x, appliedRevision: {head: true}}]\n"))
	f.Add([]byte("- a\n---\nb: 1\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("f.yaml", data)
		if err != nil {
			if _, ok := err.(Errors); !ok {
				t.Fatalf("error of type %T", err)
			}
			return
		}
		for _, tg := range c.ResolvedTargets() {
			if tg.PullRequest == nil || tg.FailOnRefusal == nil || tg.PullRequest.Draft == nil {
				t.Fatalf("unresolved target %+v", tg)
			}
		}
	})
}
