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
// a refusal (exit 1, named in the plan) or an error (exit 2, named on
// stderr), never a crash, a network access or a git run.
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
		code  int
		want  string
	}{
		{"remote base", map[string]string{"app/kustomization.yaml": "resources:\n- c.yaml\n- github.com/example/repo//base?ref=v1\n- https://example.com/x.yaml\n- git@example.com:org/repo\n"}, [2]string{}, 1, "resources[1] (remote (not fetched))"},
		{"escape", map[string]string{"app/kustomization.yaml": "resources: [c.yaml, ../../etc/passwd]\n"}, [2]string{}, 1, "(escape)"},
		{"absolute", map[string]string{"app/kustomization.yaml": "resources: [c.yaml, /etc/passwd]\n"}, [2]string{}, 1, "(absolute)"},
		{"symlink outside", map[string]string{"app/kustomization.yaml": "resources: [c.yaml, p.yaml]\n"}, [2]string{"app/p.yaml", "/etc/passwd"}, 1, "(symlink)"},
		{"symlinked folder outside", map[string]string{"app/kustomization.yaml": "resources: [c.yaml, etc/hostname]\n"}, [2]string{"app/etc", "/etc"}, 1, "(symlink)"},
		{"cycle", map[string]string{"app/kustomization.yaml": "resources: [c.yaml, ../b]\n", "b/kustomization.yaml": "resources: [../app]\n"}, [2]string{}, 2, "(cycle)"},
		{"alias bomb", map[string]string{"app/kustomization.yaml": "resources: [c.yaml, bomb.yaml]\n", "app/bomb.yaml": bomb}, [2]string{}, 2, "alias bomb"},
		{"alias bomb in a kustomization", map[string]string{"app/kustomization.yaml": "resources: [c.yaml]\nx:\n" + strings.SplitN(bomb, "bomb:\n", 2)[1]}, [2]string{}, 2, "excessive aliasing"},
		{"deep nesting", map[string]string{"app/kustomization.yaml": "resources: [c.yaml, d.yaml]\n", "app/d.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\nx: " + strings.Repeat("{a: ", 10000) + "x" + strings.Repeat("}", 10000) + "\n"}, [2]string{}, 2, "nests more than"},
		{"50 MB file", map[string]string{"app/kustomization.yaml": "resources: [c.yaml, big.yaml]\n", "app/big.yaml": big}, [2]string{}, 1, "(too large)"},
		{"non-UTF-8", map[string]string{"app/kustomization.yaml": "resources: [c.yaml, l.yaml]\n", "app/l.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: l\ndata:\n  k: caf\xe9\n"}, [2]string{}, 2, "app/l.yaml:6: not valid UTF-8"},
		{"duplicate keys", map[string]string{"app/kustomization.yaml": "resources: [c.yaml]\nnamespace: a\nnamespace: b\n"}, [2]string{}, 1, "duplicate key namespace"},
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
			got := out
			if c.code == 2 {
				got = stderr
			}
			if code != c.code || !strings.Contains(got, c.want) {
				t.Errorf("exit %d (want %d), output lacks %q:\nstdout: %.2000s\nstderr: %.2000s", code, c.code, c.want, out, stderr)
			}
			if strings.Contains(out+stderr, "root:x:0:0") {
				t.Errorf("a file outside the repository was read")
			}
		})
	}
}
