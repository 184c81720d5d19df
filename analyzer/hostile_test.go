package analyzer

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/repofs"
)

// Hostile repositories: content an attacker controls (a pull request, a
// compromised dependency vendored into the repo) must be refused or be an
// error that names the construct, within bounded time and memory, never a
// panic, and never reach the network. Every case runs twice: from an
// in-memory snapshot and from a real checkout on disk through LoadDir.

const configMap = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: v\n"

// billionLaughs is nine levels of nine aliases: 9^9 (387 million) leaves
// when expanded, a few hundred bytes when not.
func billionLaughs(indent string) string {
	var b strings.Builder
	b.WriteString(indent + "l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "%sl%d: &l%d [", indent, i, i)
		for j := 0; j < 9; j++ {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

func nestedSeq(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

func nestedMap(depth int) string {
	return strings.Repeat("{a: ", depth) + "x" + strings.Repeat("}", depth)
}

// hostileCase is one hostile repository. The outcome is either an error
// (code "") or a refusal with that code; every string in want must appear in
// the error, or in one refusal's field and message.
type hostileCase struct {
	name  string
	files map[string]string
	links map[string]string // symlinks, on disk only: path -> target
	root  string
	code  string
	want  []string
	live  []map[string]any
	big   string // a file written with 50 MB of content, on disk only
}

func wide(indent string, n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%sk%d: v\n", indent, i)
	}
	return b.String()
}

// fiftyMB is a ConfigMap of 50 MB: one huge value, which every YAML reader
// on the way would copy more than once.
func fiftyMB() []byte {
	head := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  blob: "
	b := make([]byte, 0, 50<<20+len(head)+1)
	b = append(b, head...)
	for len(b) < 50<<20 {
		b = append(b, "0123456789abcdef"...)
	}
	return append(b, '\n')
}

func driftedConfigMap() []map[string]any {
	return []map[string]any{{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "c"}, "data": map[string]any{"k": "changed"}}}
}

func hostileCases() []hostileCase {
	k := func(body string) map[string]string {
		return map[string]string{"app/kustomization.yaml": body, "app/c.yaml": configMap}
	}
	var cases []hostileCase
	for _, remote := range []string{
		"github.com/example/repo//base?ref=v1",
		"GitHub.com/example/repo",
		"https://example.com/manifests/app.yaml",
		"HTTPS://EXAMPLE.COM/app.yaml",
		"http://example.com/app.yaml",
		"git::https://example.com/org/repo//base",
		"ssh://git@example.com/org/repo",
		"git@github.com:example/repo",
		"file:///etc/kubernetes",
		"gitlab.com/org/repo//deploy?ref=main",
		"example.com/org/repo.git",
	} {
		// GitHub forms are refused as unpinned or not fetched, the others as remote.
		cases = append(cases, hostileCase{name: "remote resource " + remote, files: k("resources:\n- c.yaml\n- " + remote + "\n"),
			root: "app", code: CodeUnsupported, want: []string{"(remote", remote}})
	}
	cases = append(cases,
		hostileCase{name: "remote base", files: k("resources: [c.yaml]\nbases:\n- https://example.com/base\n"),
			root: "app", code: CodeUnsupported, want: []string{"bases[0] (remote)"}},
		hostileCase{name: "remote patch", files: k("resources: [c.yaml]\npatches:\n- path: https://example.com/p.yaml\n"),
			root: "app", code: CodeUnsupported, want: []string{"patches[0] (remote)"}},
		hostileCase{name: "remote in a base", files: map[string]string{
			"app/kustomization.yaml": "resources: [../base]\n", "base/kustomization.yaml": "resources:\n- c.yaml\n- git@example.com:org/repo\n",
			"base/c.yaml": configMap}, root: "app", code: CodeUnsupported, want: []string{"(remote)", "base/kustomization.yaml"}},
		hostileCase{name: "escape", files: k("resources:\n- c.yaml\n- ../../outside.yaml\n"),
			root: "app", code: CodeUnsupported, want: []string{"resources[1] (escape)", "climbs out"}},
		hostileCase{name: "escape through a subfolder", files: k("resources:\n- c.yaml\n- sub/../../../x\n"),
			root: "app", code: CodeUnsupported, want: []string{"(escape)"}},
		hostileCase{name: "escaping patch", files: k("resources: [c.yaml]\npatches:\n- path: ../../p.yaml\n"),
			root: "app", code: CodeUnsupported, want: []string{"patches[0] (escape)"}},
		hostileCase{name: "escaping root", files: k("resources: [c.yaml]\n"), root: "../..", want: []string{"escapes the repository"}},
		hostileCase{name: "absolute", files: k("resources:\n- c.yaml\n- /etc/passwd\n"),
			root: "app", code: CodeUnsupported, want: []string{"resources[1] (absolute)", "/etc/passwd"}},
		hostileCase{name: "absolute patch", files: k("resources: [c.yaml]\npatches:\n- path: /etc/passwd\n"),
			root: "app", code: CodeUnsupported, want: []string{"patches[0] (absolute)"}},
		hostileCase{name: "absolute root", files: k("resources: [c.yaml]\n"), root: "/etc", want: []string{"absolute"}},
		hostileCase{name: "cycle", files: map[string]string{
			"a/kustomization.yaml": "resources: [../b]\n", "b/kustomization.yaml": "resources: [../a, c.yaml]\n", "b/c.yaml": configMap},
			root: "a", code: CodeUnsupported, want: []string{"(cycle)", "a → b → a"}},
		hostileCase{name: "self cycle", files: k("resources: [c.yaml, .]\n"),
			root: "app", code: CodeUnsupported, want: []string{"resources[1] (cycle)"}},
		hostileCase{name: "diamond", files: map[string]string{
			"app/kustomization.yaml":    "resources: [../left, ../right]\n",
			"left/kustomization.yaml":   "resources: [../shared]\n",
			"right/kustomization.yaml":  "resources: [../shared]\n",
			"shared/kustomization.yaml": "resources: [c.yaml]\n",
			"shared/c.yaml":             configMap},
			root: "app", code: CodeRenderFailed, want: []string{"already registered id"}},
		hostileCase{name: "alias bomb in a resource", files: k("resources: [c.yaml, bomb.yaml]\n"), root: "app",
			want: []string{"app/bomb.yaml:", "alias bomb"}},
		hostileCase{name: "alias bomb in a patch", files: k("resources: [c.yaml]\npatches:\n- path: bomb.yaml\n"), root: "app",
			code: CodeUnsupported, want: []string{"patches[0] (unparseable)", "alias bomb"}},
		hostileCase{name: "alias bomb in a kustomization", files: k("resources: [c.yaml]\ncommonAnnotations:\n  a: b\nx-bomb:\n" + billionLaughs("  ")),
			root: "app", want: []string{"app/kustomization.yaml", "alias"}},
		hostileCase{name: "alias bomb in a known kustomization field", files: k("resources: [c.yaml]\nbuildMetadata:\n" +
			"- &l0 [a, a, a, a, a, a, a, a, a]\n- &l1 [*l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0, *l0]\n- &l2 [*l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1, *l1]\n" +
			"- &l3 [*l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2, *l2]\n- &l4 [*l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3, *l3]\n- &l5 [*l4, *l4, *l4, *l4, *l4, *l4, *l4, *l4, *l4]\n" +
			"- &l6 [*l5, *l5, *l5, *l5, *l5, *l5, *l5, *l5, *l5]\n- &l7 [*l6, *l6, *l6, *l6, *l6, *l6, *l6, *l6, *l6]\n- &l8 [*l7, *l7, *l7, *l7, *l7, *l7, *l7, *l7, *l7]\n"),
			root: "app", want: []string{"app/kustomization.yaml", "alias"}},
		hostileCase{name: "deep sequence in a resource", files: k("resources: [c.yaml, deep.yaml]\n"), root: "app", want: []string{"app/deep.yaml:", "nests more than 100 levels"}},
		hostileCase{name: "deep mapping in a resource", files: k("resources: [c.yaml, deepmap.yaml]\n"), root: "app", want: []string{"app/deepmap.yaml:", "nests more than 100 levels"}},
		hostileCase{name: "wide mapping in a resource", files: k("resources: [c.yaml, wide.yaml]\n"), root: "app", want: []string{"app/wide.yaml:", "bounded time"}},
		hostileCase{name: "wide labels in a kustomization", files: k("resources: [c.yaml]\ncommonLabels:\n" + wide("  ", 4000)),
			root: "app", code: CodeUnsupported, want: []string{"bounded time"}},
		hostileCase{name: "deep kustomization", files: k("resources: [c.yaml]\ncommonLabels: " + nestedMap(10000) + "\n"),
			root: "app", want: []string{"app/kustomization.yaml", "depth"}},
		hostileCase{name: "non-UTF-8 resource", files: k("resources: [c.yaml, latin1.yaml]\n"), root: "app",
			want: []string{"latin1.yaml:6", "UTF-8"}},
		hostileCase{name: "non-UTF-8 kustomization", files: k("resources: [c.yaml]\ncommonAnnotations:\n  owner: \"caf\xe9\"\n"),
			root: "app", want: []string{"app/kustomization.yaml", "UTF-8"}},
		hostileCase{name: "duplicate keys in a resource", files: k("resources: [c.yaml, dup.yaml]\n"), root: "app",
			code: CodeRenderFailed, want: []string{"dup.yaml", `mapping key "k" already defined`}, live: driftedConfigMap()},
		hostileCase{name: "50 MB resource", files: k("resources: [c.yaml, big.yaml]\n"), root: "app", code: CodeUnsupported,
			want: []string{"resources[1] (too large)", "app/big.yaml"}, big: "app/big.yaml"},
		hostileCase{name: "50 MB kustomization", files: map[string]string{"app/c.yaml": configMap}, root: "app", code: CodeUnsupported,
			want: []string{"file too large", "app/kustomization.yaml"}, big: "app/kustomization.yaml"},
		hostileCase{name: "symlinked resource inside the repo", files: k("resources: [c.yaml, link.yaml]\n"), links: map[string]string{"app/link.yaml": "c.yaml"},
			root: "app", code: CodeUnsupported, want: []string{"resources[1] (symlink)"}},
		hostileCase{name: "symlinked resource outside the repo", files: k("resources: [c.yaml, passwd.yaml]\n"), links: map[string]string{"app/passwd.yaml": "/etc/passwd"},
			root: "app", code: CodeUnsupported, want: []string{"resources[1] (symlink)"}},
		hostileCase{name: "symlinked folder inside the repo", files: map[string]string{"app/kustomization.yaml": "resources: [../linked]\n",
			"base/kustomization.yaml": "resources: [c.yaml]\n", "base/c.yaml": configMap}, links: map[string]string{"linked": "base"},
			root: "app", code: CodeUnsupported, want: []string{"resources[0] (symlink)"}},
		hostileCase{name: "symlinked folder outside the repo", files: k("resources: [c.yaml, etc/hostname]\n"), links: map[string]string{"app/etc": "/etc"},
			root: "app", code: CodeUnsupported, want: []string{"resources[1] (symlink)"}},
		hostileCase{name: "symlinked kustomization file", files: map[string]string{"app/c.yaml": configMap, "other/kustomization.yaml": "resources: [../app/c.yaml]\n"},
			links: map[string]string{"app/kustomization.yaml": "../other/kustomization.yaml"}, root: "app", code: CodeUnsupported, want: []string{"symlink"}},
		hostileCase{name: "symlinked patch", files: k("resources: [c.yaml]\npatches:\n- path: p.yaml\n"), links: map[string]string{"app/p.yaml": "/etc/passwd"},
			root: "app", code: CodeUnsupported, want: []string{"patches[0] (symlink)"}},
		hostileCase{name: "symlinked root", files: map[string]string{"real/c.yaml": configMap}, links: map[string]string{"app": "real"},
			root: "app", code: CodeUnsupported, want: []string{"symlink"}},
		hostileCase{name: "symlinked manifest in a plain folder", files: map[string]string{"plain/c.yaml": configMap}, links: map[string]string{"plain/x.yaml": "/etc/passwd"},
			root: "plain", code: CodeUnsupported, want: []string{"symlink", "plain/x.yaml"}},
		hostileCase{name: "duplicate keys in a kustomization", files: k("resources: [c.yaml]\nnamespace: a\nnamespace: b\n"),
			root: "app", code: CodeUnsupported, want: []string{"duplicate key namespace"}},
	)
	extra := map[string]string{
		"app/bomb.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bomb\nbomb:\n" + billionLaughs("  "),
		"app/deep.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\nx: " + nestedSeq(10000) + "\n",
		"app/deepmap.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: deep\nx: " + nestedMap(10000) + "\n",
		"app/latin1.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: l\ndata:\n  owner: caf\xe9\n",
		"app/wide.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: w\ndata:\n" + wide("  ", 4000),
		"app/dup.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\ndata:\n  k: one\n  k: two\n",
	}
	for i := range cases {
		for p, c := range extra {
			if _, ok := cases[i].files[p]; !ok && strings.HasPrefix(p, "app/") && cases[i].files["app/kustomization.yaml"] != "" {
				cases[i].files[p] = c
			}
		}
	}
	return cases
}

func checkHostile(t *testing.T, c hostileCase, p *Plan, err error) {
	t.Helper()
	if c.code == "" {
		if err == nil {
			t.Fatalf("want an error naming %q, got a plan:\n%s", c.want, dump(p))
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("error %q does not name %q", err, w)
			}
		}
		return
	}
	if err != nil {
		t.Fatalf("want a %s refusal naming %q, got the error %v", c.code, c.want, err)
	}
	if len(p.Edits) != 0 || len(p.Files) != 0 {
		t.Errorf("a hostile repository produced edits or files:\n%s", dump(p))
	}
	for _, r := range p.Refusals {
		text := r.Field + " " + r.Message + " " + r.File
		ok := r.Code == c.code
		for _, w := range c.want {
			ok = ok && strings.Contains(text, w)
		}
		if ok {
			return
		}
	}
	t.Errorf("no %s refusal names %q:\n%s", c.code, c.want, dump(p))
}

func TestHostileRepositoriesInMemory(t *testing.T) {
	guardNetwork(t)
	for _, c := range hostileCases() {
		if len(c.links) > 0 {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			repo := repoOf(t, c.files)
			if c.big != "" {
				// As the bot loads a tarball: the file by its size alone.
				if err := repo.AddUnkept(c.big, 50<<20); err != nil {
					t.Fatal(err)
				}
			}
			var p *Plan
			var err error
			bounded(t, "Analyze", func() {
				p, err = Analyze(Input{Repo: repo, Root: c.root, Live: asLive(c.live)})
			})
			checkHostile(t, c, p, err)
			if c.big != "" && !strings.Contains(dump(p), "is 52428800 bytes") {
				t.Errorf("the refusal does not give the file's size:\n%s", dump(p))
			}
		})
	}
}

// writeTree writes files and symlinks under a fresh temporary folder.
func writeTree(t *testing.T, files, links map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for p, target := range links {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, full); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func loadDirAndAnalyze(t *testing.T, dir, root string, live []map[string]any) (*Plan, error) {
	repo, err := repofs.LoadDir(dir, 0)
	if err != nil {
		return nil, err
	}
	return Analyze(Input{Repo: repo, Root: root, Live: asLive(live)})
}

func TestHostileRepositoriesOnDisk(t *testing.T) {
	guardNetwork(t)
	for _, c := range hostileCases() {
		t.Run(c.name, func(t *testing.T) {
			dir := writeTree(t, c.files, c.links)
			if c.big != "" {
				if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(c.big)), fiftyMB(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var p *Plan
			var err error
			bounded(t, "LoadDir and Analyze", func() { p, err = loadDirAndAnalyze(t, dir, c.root, c.live) })
			checkHostile(t, c, p, err)
			if p != nil && strings.Contains(dump(p), "root:x:0:0") {
				t.Errorf("a file outside the repository was read:\n%s", dump(p))
			}
		})
	}
}
