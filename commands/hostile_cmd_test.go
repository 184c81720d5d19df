package commands

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// recordingListener accepts and counts connections on a local port: the
// proxy every sandboxed run points HTTP(S)_PROXY at.
func recordingListener(t *testing.T) (addr string, count func() int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String(), n.Load
}

// Hostile repositories through the command: each ends in bounded time with
// an error (exit 2, named on stderr: the root does not build, or a file is
// unreadable), never a crash, a network access or a git run. A refusal of
// the root is in the plan on stdout too.
func TestPlanHostileRepositories(t *testing.T) {
	const cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: v\n"
	bomb := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\nbomb:\n  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
	for i := 1; i <= 9; i++ {
		bomb += "  l" + string(rune('0'+i)) + ": &l" + string(rune('0'+i)) + " [" + strings.TrimSuffix(strings.Repeat("*l"+string(rune('0'+i-1))+", ", 9), ", ") + "]\n"
	}
	big := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  blob: " + strings.Repeat("0123456789abcdef", 50<<16) + "\n"
	cases := []struct {
		name  string
		files map[string]string
		link  [2]string
		want  string
	}{
		{"remote base", map[string]string{"app/kustomization.yaml": "resources:\n- c.yaml\n- github.com/example/repo//base?ref=v1\n- https://example.com/x.yaml\n- git@example.com:org/repo\n"}, [2]string{}, "resources[1] (remote (not fetched))"},
		{"escape", map[string]string{"app/kustomization.yaml": "resources: [c.yaml, ../../etc/passwd]\n"}, [2]string{}, "(escape)"},
		{"absolute", map[string]string{"app/kustomization.yaml": "resources: [c.yaml, /etc/passwd]\n"}, [2]string{}, "(absolute)"},
		{"symlink outside", map[string]string{"app/kustomization.yaml": "resources: [c.yaml, p.yaml]\n"}, [2]string{"app/p.yaml", "/etc/passwd"}, "(symlink)"},
		{"symlinked folder outside", map[string]string{"app/kustomization.yaml": "resources: [c.yaml, etc/hostname]\n"}, [2]string{"app/etc", "/etc"}, "(symlink)"},
		{"cycle", map[string]string{"app/kustomization.yaml": "resources: [c.yaml, ../b]\n", "b/kustomization.yaml": "resources: [../app]\n"}, [2]string{}, "(cycle)"},
		{"alias bomb", map[string]string{"app/kustomization.yaml": "resources: [c.yaml, bomb.yaml]\n", "app/bomb.yaml": bomb}, [2]string{}, "alias bomb"},
		{"alias bomb in a kustomization", map[string]string{"app/kustomization.yaml": "resources: [c.yaml]\nx:\n" + strings.SplitN(bomb, "bomb:\n", 2)[1]}, [2]string{}, "excessive aliasing"},
		{"deep nesting", map[string]string{"app/kustomization.yaml": "resources: [c.yaml, d.yaml]\n", "app/d.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\nx: " + strings.Repeat("{a: ", 10000) + "x" + strings.Repeat("}", 10000) + "\n"}, [2]string{}, "nests more than"},
		{"50 MB file", map[string]string{"app/kustomization.yaml": "resources: [c.yaml, big.yaml]\n", "app/big.yaml": big}, [2]string{}, "(too large)"},
		{"non-UTF-8", map[string]string{"app/kustomization.yaml": "resources: [c.yaml, l.yaml]\n", "app/l.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: l\ndata:\n  k: caf\xe9\n"}, [2]string{}, "app/l.yaml:6: not valid UTF-8"},
		{"duplicate keys", map[string]string{"app/kustomization.yaml": "resources: [c.yaml]\nnamespace: a\nnamespace: b\n"}, [2]string{}, "duplicate key namespace"},
	}
	live := filepath.Join(t.TempDir(), "live.yaml")
	if err := os.WriteFile(live, []byte(cm), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			repo := t.TempDir()
			c.files["app/c.yaml"] = cm
			writeFiles_(t, repo, c.files)
			if c.link[0] != "" {
				if err := os.Symlink(c.link[1], filepath.Join(repo, c.link[0])); err != nil {
					t.Fatal(err)
				}
			}
			out, stderr, code := sandboxedRun(t, "plan", "--repo", repo, "--root", "app", "--live", live, "-o", "json")
			if code != 2 || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d (want 2), stderr lacks %q:\nstdout: %.2000s\nstderr: %.2000s", code, c.want, out, stderr)
			}
			if strings.Contains(out+stderr, "root:x:0:0") {
				t.Errorf("a file outside the repository was read")
			}
		})
	}
}
