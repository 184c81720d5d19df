package commands

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Issue 55, item 6: a plan that runs past a few seconds names its stage on
// a terminal; piped (no terminal), or with -q, it says nothing.
func TestPlanNamesItsStageOnATerminal(t *testing.T) {
	defer func(after time.Duration, term func(io.Writer) bool) { progressAfter, stderrIsTerminal = after, term }(progressAfter, stderrIsTerminal)
	progressAfter = 20 * time.Millisecond
	stderrIsTerminal = func(io.Writer) bool { return true }
	var w lockedBuffer
	p := newProgress(&w, false)
	p.doing("building a big root")
	time.Sleep(150 * time.Millisecond)
	p.done()
	said := w.String()
	time.Sleep(50 * time.Millisecond)
	if !strings.HasPrefix(said, "driftback plan: building a big root… (") || w.String() != said {
		t.Errorf("on a terminal: %q, then %q after done", said, w.String())
	}
	if newProgress(&w, true) != nil {
		t.Error("-q still reports progress")
	}
	stderrIsTerminal = func(io.Writer) bool { return false }
	if newProgress(&w, false) != nil {
		t.Error("piped, progress is reported")
	}

	// The plan itself: in process, stderr taken for a terminal, every
	// stage long.
	progressAfter = 0
	args := []string{"plan", "--repo", "../examples/shop", "--root", "overlays/prod", "--live", "../examples/live.yaml"}
	for _, c := range []struct {
		terminal bool
		extra    []string
		want     string
	}{
		{true, nil, "driftback plan: building overlays/prod and comparing it with 3 live objects…"},
		{false, nil, ""},
		{true, []string{"-q"}, ""},
	} {
		stderrIsTerminal = func(io.Writer) bool { return c.terminal }
		var stdout, stderr lockedBuffer
		code := execute(testBinary(t), append(args, c.extra...), strings.NewReader(""), &stdout, &stderr)
		got := stderr.String()
		if code != 1 || (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("terminal %v %v: exit %d, stderr %q; want it to say %q", c.terminal, c.extra, code, got, c.want)
		}
		if strings.Contains(stdout.String(), "driftback plan:") {
			t.Errorf("a stage line on stdout: %q", stdout.String())
		}
	}
}

// Issue 55, item 6: a live file of many objects the root does not render
// (kube-root-ca.crt in every namespace) gives one note that counts them,
// not a line each; --show-untracked names every one, and -o json lists
// them under untracked.
func TestPlanCountsUntrackedObjects(t *testing.T) {
	repo := t.TempDir()
	os.WriteFile(filepath.Join(repo, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: shop}\ndata: {k: v}\n"), 0o644)
	var live strings.Builder
	live.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: app, namespace: shop}\ndata: {k: v}\n")
	for i := range 200 {
		fmt.Fprintf(&live, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: kube-root-ca.crt, namespace: ns-%03d}\ndata: {ca.crt: x}\n", i)
	}
	file := filepath.Join(t.TempDir(), "live.yaml")
	os.WriteFile(file, []byte(live.String()), 0o644)
	out, stderr, code := driftback(t, "plan", "--repo", repo, "--root", ".", "--live", file)
	if code != 0 || strings.Count(out, "note: untracked") != 1 || !strings.Contains(out, "untracked: 200 objects are in the cluster but . does not render them, among them ConfigMap/ns-000/kube-root-ca.crt") {
		t.Errorf("exit %d, stderr %q, stdout:\n%s", code, stderr, out)
	}
	out, _, _ = driftback(t, "plan", "--repo", repo, "--root", ".", "--live", file, "--show-untracked")
	if n := strings.Count(out, "\nuntracked: ConfigMap/"); n != 200 {
		t.Errorf("--show-untracked named %d, want 200:\n%.2000s", n, out)
	}
	out, _, _ = driftback(t, "plan", "--repo", repo, "--root", ".", "--live", file, "-o", "json")
	var doc struct{ Untracked []map[string]string }
	if err := json.Unmarshal([]byte(out), &doc); err != nil || len(doc.Untracked) != 200 {
		t.Errorf("-o json lists %d untracked (%v)", len(doc.Untracked), err)
	}
}
