package ktree

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// Forests of neighbouring commits (one file changed) hold one parse and one
// decode of each unchanged file between them, a fresh one of the changed
// file, and the shared table forgets what no Forest holds any more.
func TestForestsShareUnchangedParses(t *testing.T) {
	files := map[string]string{
		"sharing/base/kustomization.yaml": "resources:\n- deploy.yaml\n",
		"sharing/base/deploy.yaml":        deploy,
		"sharing/app/kustomization.yaml":  "resources:\n- ../base\n",
		"sharing/app/patch.yaml":          smp,
	}
	older := NewForest(mkrepo(t, files, nil))
	files["sharing/app/patch.yaml"] = smp + "# a later commit\n"
	newer := NewForest(mkrepo(t, files, nil))

	for _, f := range []*Forest{older, newer} {
		if _, refs, err := f.Load("sharing/app"); err != nil || len(refs) > 0 {
			t.Fatalf("load app: %v %v", err, refs)
		}
	}
	for p, same := range map[string]bool{"sharing/base/deploy.yaml": true, "sharing/app/kustomization.yaml": true, "sharing/app/patch.yaml": false} {
		a, errA := older.Parse(p)
		b, errB := newer.Parse(p)
		if errA != nil || errB != nil {
			t.Fatalf("parse %s: %v %v", p, errA, errB)
		}
		if (a == b) != same {
			t.Errorf("%s: the two commits share its parse: %v, want %v", p, a == b, same)
		}
	}
	for _, p := range []string{"sharing/base/kustomization.yaml", "sharing/app/kustomization.yaml"} {
		a, b := older.decoded.m[p], newer.decoded.m[p]
		if a == nil || a != b {
			t.Errorf("%s: decoded %p and %p, want one decode shared", p, a, b)
		}
	}

	// Nothing is kept for its own sake: once the Forests go, so do the
	// entries (a cleanup after the GC removes them).
	older, newer = nil, nil
	deadline := time.Now().Add(10 * time.Second)
	for sharedParses.held("sharing/")+sharedDecodes.held("sharing/") > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the shared tables still hold %d parses and %d decodes with no Forest left", sharedParses.held("sharing/"), sharedDecodes.held("sharing/"))
		}
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
}

// held counts the entries under a path prefix, live or not yet dropped.
func (s *shared[V]) held(prefix string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k := range s.m {
		if strings.HasPrefix(k.path, prefix) {
			n++
		}
	}
	return n
}
