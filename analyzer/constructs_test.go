package analyzer

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
)

// The constructs fixture holds one root per family of kustomize features
// that the build applies but the projection does not trace (DESIGN §6).
// The no-op and apply-and-rebuild invariants run over it with every other
// fixture; these cases pin what each family does to one drift: a field it
// does not touch is written to its source document, a field it supplies is
// refused by name, and nothing is written into the construct.

type constructCase struct {
	name, root, kind, obj string
	path                  jsonvalue.Path
	value                 any
	// want: "" for an edit of file, else the refusal code, whose message
	// and file must hold every string of names.
	file  string
	code  string
	names []string
	// route: an edit placed in a value input (patch, labels, generator),
	// which changes exactly one line of file
	route string
}

func TestConstructDrifts(t *testing.T) {
	k, n := jsonvalue.Key, jsonvalue.Name
	container := func(c string, rest ...jsonvalue.Step) jsonvalue.Path {
		return append(jsonvalue.Path{k("spec"), k("template"), k("spec"), k("containers"), n(c)}, rest...)
	}
	cases := []constructCase{
		// namePrefix, nameSuffix, configMapGenerator
		{name: "renamed: untouched env goes to the document the object was read from", root: "renamed", kind: "Deployment", obj: "shop-web-eu",
			path: container("web", k("env"), n("LOG"), k("value")), value: "debug", file: "renamed/app.yaml"},
		{name: "renamed: image", root: "renamed", kind: "Deployment", obj: "shop-web-eu",
			path: container("web", k("image")), value: "web:1.1", file: "renamed/app.yaml"},
		{name: "renamed: a name reference the build rewrites", root: "renamed", kind: "Deployment", obj: "shop-web-eu",
			path: jsonvalue.Path{k("spec"), k("template"), k("spec"), k("volumes"), n("cfg"), k("configMap"), k("name")}, value: "other-config",
			code: CodeBuildOwned, names: []string{"volumes[cfg].configMap.name", "name kustomize rewrites"}},
		// edited in place: the literal is edited, and renames it
		{name: "renamed: generated ConfigMap edited in place", root: "renamed", kind: "ConfigMap", obj: "",
			path: jsonvalue.Path{k("data"), k("MODE")}, value: "slow",
			file: "renamed/kustomization.yaml", route: RouteGenerator},
		// every patch form
		{name: "patched: untouched env", root: "patched", kind: "Deployment", obj: "api",
			path: container("api", k("env"), n("LOG"), k("value")), value: "debug", file: "patched/app.yaml"},
		{name: "patched: untouched port", root: "patched", kind: "Service", obj: "api",
			path: jsonvalue.Path{k("spec"), k("ports"), n("http"), k("port")}, value: int64(8080), file: "patched/app.yaml"},
		{name: "patched: memory from an inline patch", root: "patched", kind: "Deployment", obj: "api",
			path: container("api", k("resources"), k("limits"), k("memory")), value: "1Gi",
			file: "patched/kustomization.yaml", route: RoutePatch},
		{name: "patched: replicas from a JSON6902 file", root: "patched", kind: "Deployment", obj: "api",
			path: jsonvalue.Path{k("spec"), k("replicas")}, value: int64(5),
			file: "patched/replicas.yaml", route: RoutePatch},
		{name: "patched: annotation from a two-object patch file", root: "patched", kind: "Service", obj: "api",
			path: jsonvalue.Path{k("metadata"), k("annotations"), k("team")}, value: "search",
			file: "patched/annotate.yaml", route: RoutePatch},
		{name: "patched: field added by inline patchesJson6902", root: "patched", kind: "Service", obj: "api",
			path: jsonvalue.Path{k("spec"), k("sessionAffinity")}, value: "None",
			file: "patched/kustomization.yaml", route: RoutePatch},
		{name: "patched: a Service type, inline patchesStrategicMerge", root: "patched", kind: "Service", obj: "api",
			path: jsonvalue.Path{k("spec"), k("type")}, value: "LoadBalancer",
			file: "patched/kustomization.yaml", route: RoutePatch},
		// vars and replacements
		{name: "derived: untouched env", root: "derived", kind: "Deployment", obj: "worker",
			path: container("worker", k("env"), n("LOG"), k("value")), value: "debug", file: "derived/app.yaml"},
		{name: "derived: a var's value", root: "derived", kind: "Deployment", obj: "worker",
			path: container("worker", k("env"), n("DB"), k("value")), value: "db.other",
			code: CodeBuildOwned, names: []string{"var DB_HOST", "derived/kustomization.yaml"}},
		// the replacement's source also feeds the Deployment's own image
		{name: "derived: a replacement's target alone", root: "derived", kind: "Service", obj: "db",
			path: jsonvalue.Path{k("metadata"), k("annotations"), k("worker-image")}, value: "worker:9",
			code: CodeSharedEntryConflict, names: []string{"replacements[0]", "derived/app.yaml", "Deployment/worker spec.template.spec.containers[worker].image wants worker:3.1"}},
		{name: "derived: annotation from a builtin transformer's patch file", root: "derived", kind: "Deployment", obj: "worker",
			path: jsonvalue.Path{k("metadata"), k("annotations"), k("probe")}, value: "disabled",
			file: "derived/probe.yaml", route: RoutePatch},
		{name: "derived: untouched port", root: "derived", kind: "Service", obj: "db",
			path: jsonvalue.Path{k("spec"), k("ports"), n("pg"), k("port")}, value: int64(6432), file: "derived/app.yaml"},
		// components and builtin transformer configs
		{name: "withcomp: untouched image", root: "withcomp", kind: "Deployment", obj: "edge",
			path: container("edge", k("image")), value: "edge:1.0", file: "withcomp/app.yaml"},
		{name: "withcomp: env the component's patch adds", root: "withcomp", kind: "Deployment", obj: "edge",
			path: container("edge", k("env"), n("FEATURE"), k("value")), value: "off",
			file: "comp/kustomization.yaml", route: RoutePatch},
		{name: "withcomp: label a builtin transformer sets on every object, changed on one", root: "withcomp", kind: "Deployment", obj: "edge",
			path: jsonvalue.Path{k("metadata"), k("labels"), k("tier")}, value: "core",
			code: CodeSharedEntryConflict, names: []string{"comp/kustomization.yaml", "LabelTransformer tier", "wants edge"}},
		{name: "withcomp: the component's own resource", root: "withcomp", kind: "ConfigMap", obj: "edge-settings",
			path: jsonvalue.Path{k("data"), k("timeout")}, value: "60", file: "comp/extra.yaml"},
		// secretGenerator
		{name: "secretgen: generated Secret", root: "secretgen", kind: "Secret", obj: "creds",
			path: jsonvalue.Path{k("data"), k("password")}, value: "c2VjcmV0",
			code: CodeSensitive, names: []string{"data.password"}},
	}
	repo := fixture(t, "constructs")
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			live := renderedLive(t, repo, c.root)
			var obj map[string]any
			for _, o := range live {
				id := render.IDOf(o)
				if id.Kind == c.kind && (c.obj == "" || id.Name == c.obj) {
					obj = o
				}
			}
			if obj == nil {
				t.Fatalf("no rendered %s %s", c.kind, c.obj)
			}
			if _, ok := jsonvalue.Get(obj, c.path); !ok {
				t.Fatalf("the render has no %s", c.path)
			}
			jsonvalue.Set(obj, c.path, c.value)
			p, err := Analyze(Input{Repo: repo, Root: c.root, Live: asLive(live)})
			if err != nil {
				t.Fatal(err)
			}
			out := dump(p)
			if strings.Contains(out, "hunter2") || strings.Contains(out, "c2VjcmV0") {
				t.Fatalf("a Secret value reached the plan: %s", out)
			}
			if c.code == "" {
				if len(p.Refusals) != 0 || len(p.Files) != 1 || p.Files[0].Path != c.file || len(p.Edits) != 1 {
					t.Fatalf("want one edit of %s, got %s", c.file, out)
				}
				if c.route != "" {
					orig, _ := repo.File(c.file)
					if p.Edits[0].Route != c.route || changedLines(string(orig), p.Files[0].Content) != 1 {
						t.Fatalf("want one line of %s changed, routed %s: %s", c.file, c.route, out)
					}
				}
				return
			}
			if len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != c.code {
				t.Fatalf("want one %s refusal and no file, got %s", c.code, out)
			}
			r := p.Refusals[0]
			for _, s := range c.names {
				if !strings.Contains(r.Message+" "+r.File+" "+r.Field, s) {
					t.Errorf("refusal does not name %q: %+v", s, r)
				}
			}
		})
	}
}

// changedLines counts the lines of b that differ from a's at the same
// position (and the difference in length).
func changedLines(a, b string) int {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	n := max(len(al), len(bl)) - min(len(al), len(bl))
	for i := range min(len(al), len(bl)) {
		if al[i] != bl[i] {
			n++
		}
	}
	return n
}
