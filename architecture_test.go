package main

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// The import rule (docs/ARCHITECTURE.md): imports point one way,
//
//	commands (main and commands/) → bot → analyzer, cluster, config → internal
//
// Product code imports only down the list: the three middle components
// do not import each other (the types they share live in internal/kube),
// and internal packages import no driftback package outside internal/.
// Test servers and generators (internal/githubtest, internal/kubetest,
// internal/fluxtest, internal/argotest, internal/installtest, internal/synth) are for tests; of the product's code only the demo
// command may use one (it runs the in-process GitHub server). Tests may
// also import sideways, to make realistic input, but never upward.

const module = "github.com/driftback/driftback"

// component is a package's place in the rule: its layer (higher imports
// lower) and its component within the layer.
func component(pkg string) (layer int, name string) {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	top, _, _ := strings.Cut(rel, "/")
	switch top {
	case "", "commands":
		return 4, "commands"
	case "bot":
		return 3, "bot"
	case "analyzer", "cluster", "config", "deploy":
		return 2, top
	case "internal":
		return 1, rel
	}
	return 0, rel
}

var testSupport = map[string]bool{
	module + "/internal/argotest":    true,
	module + "/internal/fluxtest":    true,
	module + "/internal/githubtest":  true,
	module + "/internal/installtest": true,
	module + "/internal/kubetest":    true,
	module + "/internal/synth":       true,
}

type listedPackage struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

func listPackages(t *testing.T) []listedPackage {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listedPackage
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages; the test would prove nothing", len(pkgs))
	}
	return pkgs
}

// importAllowed says whether product code of from may import to.
func importAllowed(from, to string) bool {
	fl, fc := component(from)
	tl, tc := component(to)
	if testSupport[to] {
		return fc == "commands" || testSupport[from]
	}
	switch {
	case fl == 1:
		return tl == 1 // internal imports only internal
	case tl < fl:
		return true
	case tl == fl:
		return tc == fc // within one component
	}
	return false
}

func TestImportDirection(t *testing.T) {
	for _, p := range listPackages(t) {
		for _, imp := range p.Imports {
			if strings.HasPrefix(imp, module) && !importAllowed(p.ImportPath, imp) {
				t.Errorf("%s imports %s, against the import rule", p.ImportPath, imp)
			}
		}
		fl, _ := component(p.ImportPath)
		for _, imp := range append(p.TestImports, p.XTestImports...) {
			if !strings.HasPrefix(imp, module) || imp == p.ImportPath {
				continue
			}
			if tl, _ := component(imp); tl > fl {
				t.Errorf("a test of %s imports %s, a layer above it", p.ImportPath, imp)
			}
		}
	}
}

// TestImportRuleCatchesViolations: the rule itself rejects each kind of
// upward or sideways import it is meant to stop.
func TestImportRuleCatchesViolations(t *testing.T) {
	bad := [][2]string{
		{"/cluster", "/analyzer"},
		{"/config", "/cluster"},
		{"/analyzer", "/bot"},
		{"/internal/yamledit", "/analyzer"},
		{"/internal/synth", "/cluster"},
		{"/bot", "/internal/githubtest"},
		{"/analyzer/ktree", "/config"},
	}
	for _, b := range bad {
		if importAllowed(module+b[0], module+b[1]) {
			t.Errorf("%s → %s is allowed", b[0], b[1])
		}
	}
	good := [][2]string{
		{"", "/bot"}, {"/bot", "/analyzer/report"}, {"/analyzer", "/analyzer/ktree"},
		{"/cluster", "/internal/kube"}, {"/internal/yamledit", "/internal/jsonvalue"}, {"", "/internal/githubtest"},
	}
	for _, g := range good {
		if !importAllowed(module+g[0], module+g[1]) {
			t.Errorf("%s → %s is refused", g[0], g[1])
		}
	}
}

// botRank is the floor of each room of bot/ (docs/ARCHITECTURE.md): a room
// imports only rooms on lower floors, and the root, which sequences them,
// sits above all. A new package under bot/ gets a floor here.
var botRank = map[string]int{
	"githubapi": 0, "metrics": 0, "keyed": 0, "attribution": 0, "shard": 0,
	"prbody": 1, "archive": 1, "discover": 1, "enforce": 1,
	"app": 2, "targetplan": 2,
	"checks": 3, "commit": 3,
	"pollstate": 4,
	"ghround":   5, "pullrequest": 5, "dashboard": 5,
	"idle": 6, "stall": 6, "webhook": 6,
}

// botRoom is the room of bot/ that pkg is, "" when it is none.
func botRoom(pkg string) string {
	room, _ := strings.CutPrefix(pkg, module+"/bot/")
	if room == pkg {
		return ""
	}
	return room
}

// boundary says why product code of from may not import imp, or "" when
// it may: the finer rules inside the components (docs/ARCHITECTURE.md),
// each keeping one kind of knowledge in one place.
func boundary(from, imp string) string {
	const analyzer = module + "/analyzer"
	if f, i := botRoom(from), botRoom(imp); f != "" && i != "" {
		fr, fok := botRank[f]
		ir, iok := botRank[i]
		switch {
		case !fok || !iok:
			return "every room of bot/ has a floor in botRank"
		case ir >= fr:
			return "a room of bot/ imports only rooms on lower floors (botRank)"
		}
	}
	switch {
	case imp == analyzer+"/ktree" && from != analyzer && !strings.HasPrefix(from, analyzer+"/"):
		return "kustomization trees are the analyzer's business: use its façade"
	case imp == analyzer && strings.HasPrefix(from, analyzer+"/") && from != analyzer+"/report":
		return "the analyzer's engines serve the façade, never the reverse"
	case strings.HasPrefix(from, module+"/bot") && from != module+"/bot/shard" && strings.HasPrefix(imp, "k8s.io/"):
		return "within the bot only bot/shard speaks to the Kubernetes API"
	case from == analyzer+"/render" && (imp == analyzer+"/dye" || imp == analyzer+"/gitops" || imp == analyzer+"/sourceform"):
		return "the build knows nothing of who supplies a value, the GitOps tool or source form"
	case from == analyzer+"/sourceform" && strings.HasPrefix(imp, module) && imp != module+"/internal/jsonvalue":
		return "the source-form algebra is values alone: it imports only internal/jsonvalue"
	}
	return ""
}

func TestPackageBoundaries(t *testing.T) {
	for _, p := range listPackages(t) {
		if room := botRoom(p.ImportPath); room != "" && !strings.Contains(room, "/") {
			if _, ok := botRank[room]; !ok {
				t.Errorf("%s has no floor in botRank", p.ImportPath)
			}
		}
		for _, imp := range p.Imports {
			if why := boundary(p.ImportPath, imp); why != "" {
				t.Errorf("%s imports %s: %s", p.ImportPath, imp, why)
			}
		}
		// Tests too reach kustomization trees only through the façade.
		for _, imp := range append(p.TestImports, p.XTestImports...) {
			if imp == module+"/analyzer/ktree" && boundary(p.ImportPath, imp) != "" {
				t.Errorf("a test of %s imports %s", p.ImportPath, imp)
			}
		}
	}
}

func TestPackageBoundariesCatchViolations(t *testing.T) {
	bad := [][2]string{
		{module + "/bot", module + "/analyzer/ktree"},
		{module + "/commands", module + "/analyzer/ktree"},
		{module + "/analyzer/ktree", module + "/analyzer"},
		{module + "/bot", "k8s.io/client-go/kubernetes"},
		{module + "/bot/githubapi", "k8s.io/apimachinery/pkg/api/errors"},
		{module + "/analyzer/render", module + "/analyzer/dye"},
		{module + "/analyzer/render", module + "/analyzer/gitops"},
		{module + "/analyzer/sourceform", module + "/internal/kube"},
		{module + "/bot/checks", module + "/bot/pullrequest"},
		{module + "/bot/idle", module + "/bot/stall"},
		{module + "/bot/app", module + "/bot/newroom"},
	}
	for _, b := range bad {
		if boundary(b[0], b[1]) == "" {
			t.Errorf("%s → %s is allowed", b[0], b[1])
		}
	}
	good := [][2]string{
		{module + "/analyzer", module + "/analyzer/ktree"},
		{module + "/bot/shard", "k8s.io/client-go/kubernetes"},
		{module + "/analyzer/report", module + "/analyzer"},
		{module + "/analyzer/sourceform", module + "/internal/jsonvalue"},
		{module + "/analyzer/gitops", module + "/analyzer/render"},
		{module + "/bot/pullrequest", module + "/bot/checks"},
		{module + "/bot", module + "/bot/stall"},
	}
	for _, g := range good {
		if why := boundary(g[0], g[1]); why != "" {
			t.Errorf("%s → %s is refused: %s", g[0], g[1], why)
		}
	}
}
