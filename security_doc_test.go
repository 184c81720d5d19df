package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/driftback/driftback/commands"
)

// SECURITY.md's permission tables are what the App and the service account
// may do: each row must be granted by app.yaml (or by `app create
// --dashboard`) or by the RBAC of deploy/ and of the Helm chart, and each
// permission or rule granted there must have its row.

// mdTable returns the rows of the Markdown tables whose header starts with
// header, each row's cells trimmed; nil when there is no such table.
func mdTable(text, header string) [][]string {
	var rows [][]string
	in := false
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case !in && strings.HasPrefix(line, header):
			in = true
		case in && strings.HasPrefix(line, "|---"):
		case in && strings.HasPrefix(line, "|"):
			cells := strings.Split(strings.Trim(line, "|"), "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			rows = append(rows, cells)
		default:
			in = false
		}
	}
	return rows
}

// unquote drops the backticks around a Markdown code span.
func unquote(s string) string { return strings.Trim(strings.TrimSpace(s), "`") }

// docAppPermissions reads the GitHub App table: "always" rows and the rows
// `--dashboard` adds, as permission → access.
func docAppPermissions(text string) (always, dashboard map[string]string, err error) {
	always, dashboard = map[string]string{}, map[string]string{}
	rows := mdTable(text, "| permission | access | asked for |")
	if len(rows) == 0 {
		return nil, nil, fmt.Errorf("no GitHub App table (| permission | access | asked for | ...)")
	}
	for _, r := range rows {
		if len(r) < 3 {
			return nil, nil, fmt.Errorf("row %q: too few cells", r)
		}
		perm, access := unquote(r[0]), r[1]
		switch r[2] {
		case "always":
			always[perm] = access
		case "`--dashboard`":
			dashboard[perm] = access
		default:
			return nil, nil, fmt.Errorf("row %q: asked for %q, want always or `--dashboard`", r, r[2])
		}
	}
	return always, dashboard, nil
}

// rule is one RBAC rule as the doc's table and the manifests both say it.
type rule struct {
	Kind      string   // ClusterRole or Role
	APIGroups []string `json:"apiGroups"`
	Resources []string `json:"resources"`
	Verbs     []string `json:"verbs"`
}

func (r rule) String() string {
	return fmt.Sprintf("%s %q %q %q", r.Kind, r.APIGroups, r.Resources, r.Verbs)
}

func (r rule) key() string {
	sorted := func(s []string) []string { c := slices.Clone(s); slices.Sort(c); return c }
	return rule{r.Kind, sorted(r.APIGroups), sorted(r.Resources), sorted(r.Verbs)}.String()
}

func splitList(cell string) []string {
	var out []string
	for _, f := range strings.Split(cell, ",") {
		f = unquote(f)
		if f == `""` {
			f = ""
		}
		out = append(out, f)
	}
	return out
}

// docRules reads the Kubernetes table.
func docRules(text string) ([]rule, error) {
	rows := mdTable(text, "| role | API groups | resources | verbs |")
	if len(rows) == 0 {
		return nil, fmt.Errorf("no Kubernetes table (| role | API groups | resources | verbs | ...)")
	}
	var out []rule
	for _, r := range rows {
		if len(r) < 4 {
			return nil, fmt.Errorf("row %q: too few cells", r)
		}
		kind, _, _ := strings.Cut(r[0], " ")
		out = append(out, rule{Kind: kind, APIGroups: splitList(r[1]), Resources: splitList(r[2]), Verbs: splitList(r[3])})
	}
	return out, nil
}

var (
	// A line that is only a template action ({{- if ... }}, {{- end }},
	// {{- include ... | nindent 4 }}) renders to nothing that holds rules.
	actionLine = regexp.MustCompile(`(?m)^\s*\{\{-?.*-?\}\}\s*$\n?`)
	action     = regexp.MustCompile(`\{\{-?.*?-?\}\}`)
)

// manifestRules reads the rules of every ClusterRole and Role in the YAML
// files under dir, but not under skip; Helm templates have their actions
// blanked out first, which keeps every rule (the chart's rules hold no
// template action).
func manifestRules(dir, skip string) ([]rule, error) {
	var out []rule
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path == skip:
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, ".yaml"):
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := action.ReplaceAllString(actionLine.ReplaceAllString(string(b), ""), "x")
		for _, doc := range strings.Split(text, "\n---") {
			var obj struct {
				Kind  string `json:"kind"`
				Rules []rule `json:"rules"`
			}
			if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if obj.Kind != "ClusterRole" && obj.Kind != "Role" {
				continue
			}
			for _, r := range obj.Rules {
				r.Kind = obj.Kind
				out = append(out, r)
			}
		}
		return nil
	})
	return out, err
}

// compareRules says what one side has that the other lacks.
func compareRules(doc, granted []rule, where string) []string {
	var ps []string
	have := map[string]bool{}
	for _, r := range granted {
		have[r.key()] = true
	}
	listed := map[string]bool{}
	for _, r := range doc {
		listed[r.key()] = true
		if !have[r.key()] {
			ps = append(ps, fmt.Sprintf("SECURITY.md lists %s, which %s does not grant", r, where))
		}
	}
	for _, r := range granted {
		if !listed[r.key()] {
			ps = append(ps, fmt.Sprintf("%s grants %s, which SECURITY.md does not list", where, r))
		}
	}
	return ps
}

// securityProblems checks a SECURITY.md text against the repository.
func securityProblems(text string) ([]string, error) {
	always, dashboard, err := docAppPermissions(text)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile("app.yaml")
	if err != nil {
		return nil, err
	}
	var manifest struct {
		Permissions map[string]string `json:"default_permissions"`
	}
	if err := yaml.Unmarshal(b, &manifest); err != nil {
		return nil, err
	}
	var ps []string
	if fmt.Sprint(always) != fmt.Sprint(manifest.Permissions) {
		ps = append(ps, fmt.Sprintf("SECURITY.md's permissions asked for always are %v; app.yaml's default_permissions are %v", always, manifest.Permissions))
	}
	if fmt.Sprint(dashboard) != fmt.Sprint(commands.DashboardPermissions) {
		ps = append(ps, fmt.Sprintf("SECURITY.md's --dashboard permissions are %v; app create --dashboard adds %v", dashboard, commands.DashboardPermissions))
	}
	doc, err := docRules(text)
	if err != nil {
		return nil, err
	}
	chart := filepath.Join("deploy", "helm")
	kustomize, err := manifestRules("deploy", chart)
	if err != nil {
		return nil, err
	}
	helm, err := manifestRules(chart, "")
	if err != nil {
		return nil, err
	}
	if len(helm) < 2 || len(kustomize) < 2 {
		return nil, fmt.Errorf("found %d rules in the chart and %d in the kustomize base; the walk missed them", len(helm), len(kustomize))
	}
	ps = append(ps, compareRules(doc, kustomize, "deploy/ (kustomize)")...)
	ps = append(ps, compareRules(doc, helm, "the Helm chart")...)
	return ps, nil
}

func TestSecurityPermissions(t *testing.T) {
	b, err := os.ReadFile("SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	ps, err := securityProblems(string(b))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		t.Error(p)
	}
}

// Each way SECURITY.md can drift from what is granted is caught.
func TestSecurityPermissionsCatchesMistakes(t *testing.T) {
	b, err := os.ReadFile("SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	leaseRow := "| Role | `coordination.k8s.io` | `leases` | get, list, create, update, delete |"
	breaks := map[string][2]string{
		"the dashboard's permission dropped": {"| `issues` | write | `--dashboard` |", "| `issues` | write | always |"},
		"a permission's access changed":      {"| `members` | read | always |", "| `members` | write | always |"},
		"a verb dropped":                     {"| `*` | `*` | get, list, watch |", "| `*` | `*` | get, list |"},
		"a rule dropped":                     {leaseRow, "| Role | `coordination.k8s.io` | `leases` | get |"},
		"a rule not granted":                 {leaseRow, leaseRow + " |\n| Role | `\"\"` | `secrets` | create | x |\n" + leaseRow},
	}
	for name, br := range breaks {
		if !strings.Contains(text, br[0]) {
			t.Fatalf("%s: SECURITY.md no longer holds %q; update this test", name, br[0])
		}
		ps, err := securityProblems(strings.Replace(text, br[0], br[1], 1))
		if err == nil && len(ps) == 0 {
			t.Errorf("%s: not caught", name)
		}
	}
}
