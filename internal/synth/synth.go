package synth

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/repofs"
)

// sharedObjects is how many objects a shared base adds to every root that
// uses it (a Deployment and a ConfigMap).
const sharedObjects = 2

// Fixture is one synthetic repository with its roots and their renders.
type Fixture struct {
	Seed    int64
	Repo    *repofs.Repo
	Roots   []string // the overlays, sorted: the roots no other root reads
	Objects int      // rendered objects over all roots

	rendered map[string][]map[string]any // per root, the plain kustomize build
}

// Generate returns a repository of roots roots with about objectsPerRoot
// objects each (at least 3), and live snapshots per root with the fraction
// drift of all objects drifted. It is NewRepo followed by Live.
func Generate(seed int64, roots, objectsPerRoot int, drift float64) (*repofs.Repo, []string, map[string][]byte, error) {
	fx, err := NewRepo(seed, roots, objectsPerRoot)
	if err != nil {
		return nil, nil, nil, err
	}
	live, _, err := fx.Live(drift)
	if err != nil {
		return nil, nil, nil, err
	}
	return fx.Repo, fx.Roots, live, nil
}

// NewRepo generates the repository and renders every root once with
// kustomize (the live snapshots derive from those renders).
func NewRepo(seed int64, roots, objectsPerRoot int) (*Fixture, error) {
	if roots < 1 {
		return nil, fmt.Errorf("synth: need at least one root, not %d", roots)
	}
	if objectsPerRoot < sharedObjects+1 {
		objectsPerRoot = sharedObjects + 1
	}
	rng := rand.New(rand.NewSource(seed))
	repo := repofs.New()
	add := func(p, s string) error { return repo.Add(p, []byte(s)) }

	shared := max(1, roots/10)
	for s := 0; s < shared; s++ {
		if err := writeShared(add, s, rng); err != nil {
			return nil, err
		}
	}
	for r := 0; r < roots; r++ {
		if err := writeRoot(add, r, r%shared, objectsPerRoot-sharedObjects, rng); err != nil {
			return nil, err
		}
	}
	fx := &Fixture{Seed: seed, Repo: repo, rendered: map[string][]map[string]any{}}
	for r := 0; r < roots; r++ {
		fx.Roots = append(fx.Roots, overlayOf(r))
	}
	sort.Strings(fx.Roots)
	fsys, err := repo.FS()
	if err != nil {
		return nil, err
	}
	for _, root := range fx.Roots {
		objs, err := Build(fsys, root)
		if err != nil {
			return nil, err
		}
		fx.rendered[root] = objs
		fx.Objects += len(objs)
	}
	return fx, nil
}

// Build is a plain `kustomize build` of one root (plugins off, as the
// analyzer builds) on an in-memory filesystem holding the repository under
// "/". The benchmarks' baseline is this call for every root.
func Build(fsys filesys.FileSystem, root string) ([]map[string]any, error) {
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = types.DisabledPluginConfig()
	resMap, err := krusty.MakeKustomizer(opts).Run(fsys, "/"+root)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", root, err)
	}
	out := make([]map[string]any, 0, resMap.Size())
	for _, r := range resMap.Resources() {
		m, err := r.Map()
		if err != nil {
			return nil, err
		}
		out = append(out, jsonvalue.Normalize(m).(map[string]any))
	}
	return out, nil
}

func writeShared(add func(p, s string) error, s int, rng *rand.Rand) error {
	dir := fmt.Sprintf("shared/s%02d", s)
	name := fmt.Sprintf("agent-s%02d", s)
	files := map[string]string{
		dir + "/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
			"# platform agent, read by every team overlay that lists it\nresources:\n- agent.yaml\n",
		dir + "/agent.yaml": deployment(name, "registry.example.com/platform/"+name+":1.0."+fmt.Sprint(rng.Intn(9)), 1) +
			"---\n" + configMap(name+"-config", rng),
	}
	return addAll(add, files)
}

// writeRoot writes teams/tNNN/{base,overlay}: private objects in the base,
// one app (Deployment, Service, ConfigMap) per file, and the overlay that
// is the root.
// overlayOf is the folder of root r, the one root that reads its base.
func overlayOf(r int) string { return fmt.Sprintf("teams/t%03d/overlay", r) }

func writeRoot(add func(p, s string) error, r, shared, private int, rng *rand.Rand) error {
	team := fmt.Sprintf("t%03d", r)
	base := "teams/" + team + "/base"
	overlay := overlayOf(r)
	files := map[string]string{}
	var resources, images, replicas []string
	apps := (private + 2) / 3
	for a := 0; a < apps; a++ {
		app := fmt.Sprintf("app-%02d", a)
		image := fmt.Sprintf("registry.example.com/%s/%s", team, app)
		var docs []string
		// Kinds in the order Deployment, Service, ConfigMap until the
		// private object count is reached.
		for k := 0; k < 3 && 3*a+k < private; k++ {
			switch k {
			case 0:
				docs = append(docs, deployment(app, image+":1.0.0", 1+rng.Intn(3)))
				if a%2 == 0 {
					images = append(images, fmt.Sprintf("- name: %s\n  newTag: \"2.%d.%d\"\n", image, rng.Intn(9), rng.Intn(20)))
				}
				if a%3 == 0 {
					replicas = append(replicas, fmt.Sprintf("- name: %s\n  count: %d\n", app, 2+rng.Intn(4)))
				}
			case 1:
				docs = append(docs, service(app))
			case 2:
				docs = append(docs, configMap(app+"-config", rng))
			}
		}
		file := app + ".yaml"
		files[base+"/"+file] = strings.Join(docs, "---\n")
		resources = append(resources, "- "+file+"\n")
	}
	files[base+"/kustomization.yaml"] = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n" +
		strings.Join(resources, "") + "commonAnnotations:\n  team.example.com/owner: " + team + "\n"

	agent := fmt.Sprintf("agent-s%02d", shared)
	images = append(images, fmt.Sprintf("- name: registry.example.com/platform/%s\n  newTag: \"1.%d.%d\"\n", agent, 1+rng.Intn(8), rng.Intn(20)))
	k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n" +
		"namespace: " + team + "\n" +
		"resources:\n- ../base\n- ../../../shared/" + fmt.Sprintf("s%02d", shared) + "\n" +
		"labels:\n- pairs:\n    team: " + team + "\n    tier: prod\n" +
		"images:\n" + strings.Join(images, "")
	if len(replicas) > 0 {
		k += "replicas:\n" + strings.Join(replicas, "")
	}
	k += "patches:\n- path: resources-patch.yaml\n"
	files[overlay+"/kustomization.yaml"] = k
	files[overlay+"/resources-patch.yaml"] = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app-00\nspec:\n" +
		"  template:\n    spec:\n      containers:\n      - name: app\n        env:\n        - name: LOG_LEVEL\n          value: info\n" +
		"        resources:\n          limits:\n            memory: 256Mi\n"
	return addAll(add, files)
}

func addAll(add func(p, s string) error, files map[string]string) error {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		if err := add(p, files[p]); err != nil {
			return err
		}
	}
	return nil
}

func deployment(name, image string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  labels:
    app: %[1]s
spec:
  replicas: %[3]d
  selector:
    matchLabels:
      app: %[1]s
  template:
    metadata:
      labels:
        app: %[1]s
    spec:
      containers:
      - name: app
        image: %[2]s
        ports:
        - name: http
          containerPort: 8080
        env:
        - name: FEATURE_FLAGS
          value: "search,export"
        - name: CACHE_SIZE
          value: "128"
`, name, image, replicas)
}

func service(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Service
metadata:
  name: %[1]s
spec:
  selector:
    app: %[1]s
  ports:
  - name: http
    port: 80
    targetPort: http
`, name)
}

func configMap(name string, rng *rand.Rand) string {
	return fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
data:
  timeout: "%ds"
  # tuned by hand
  retries: "%d"
`, name, 5+rng.Intn(30), 1+rng.Intn(5))
}

// Live returns, per root, a live snapshot (a JSON List, as `kubectl get -o
// json` prints it) of the objects a cluster that applied every root would
// hold, with round(drift × Objects) objects drifted (chosen and mutated
// deterministically from the fixture's seed and drift), and the number of
// drifted objects per root. Read it through the cluster package, so that
// sanitizing and the managedFields intent view are those of a real poll.
func (fx *Fixture) Live(drift float64) (map[string][]byte, map[string]int, error) {
	rng := rand.New(rand.NewSource(fx.Seed ^ int64(math.Float64bits(drift))))
	type ref struct {
		root string
		i    int
	}
	var all []ref
	for _, root := range fx.Roots {
		for i := range fx.rendered[root] {
			all = append(all, ref{root, i})
		}
	}
	n := int(math.Round(drift * float64(len(all))))
	n = min(max(n, 0), len(all))
	chosen := map[ref]bool{}
	for _, j := range rng.Perm(len(all))[:n] {
		chosen[all[j]] = true
	}
	out := map[string][]byte{}
	drifted := map[string]int{}
	for _, root := range fx.Roots {
		var items []any
		for i, ren := range fx.rendered[root] {
			obj := jsonvalue.Copy(ren).(map[string]any)
			var edits []jsonvalue.Path
			if chosen[ref{root, i}] {
				edits = mutate(obj, rng)
				if len(edits) > 0 {
					drifted[root]++
				}
			}
			items = append(items, dress(obj, ren, edits, fmt.Sprintf("%s/%d", root, i)))
		}
		data, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
		if err != nil {
			return nil, nil, err
		}
		out[root] = data
	}
	return out, drifted, nil
}

var (
	containers = jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("template"), jsonvalue.Key("spec"), jsonvalue.Key("containers"), jsonvalue.Name("app")}
	labelsPath = jsonvalue.Path{jsonvalue.Key("metadata"), jsonvalue.Key("labels")}
)

func child(p jsonvalue.Path, steps ...jsonvalue.Step) jsonvalue.Path {
	return append(append(jsonvalue.Path{}, p...), steps...)
}

// mutate drifts one object the way people do: an image bump, a scale, an
// env or port edit, a hand-added label, a config value. It returns the
// paths it set (for the editor's managedFields).
func mutate(obj map[string]any, rng *rand.Rand) []jsonvalue.Path {
	kind, _ := obj["kind"].(string)
	setP := func(p jsonvalue.Path, v any) jsonvalue.Path {
		jsonvalue.Set(obj, p, v)
		return p
	}
	switch kind {
	case "Deployment":
		switch rng.Intn(5) {
		case 0: // image bump: routed when an images: entry supplies the tag
			p := child(containers, jsonvalue.Key("image"))
			img, _ := jsonvalue.Get(obj, p)
			s, _ := img.(string)
			if i := strings.LastIndexByte(s, ':'); i > strings.LastIndexByte(s, '/') {
				s = s[:i]
			}
			return []jsonvalue.Path{setP(p, fmt.Sprintf("%s:3.%d.%d", s, rng.Intn(9), rng.Intn(20)))}
		case 1: // scale
			p := jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("replicas")}
			cur, _ := jsonvalue.Get(obj, p)
			n, _ := cur.(int64)
			return []jsonvalue.Path{setP(p, n+1+int64(rng.Intn(4)))}
		case 2: // env value written through to the base
			return []jsonvalue.Path{setP(child(containers, jsonvalue.Key("env"), jsonvalue.Name("CACHE_SIZE"), jsonvalue.Key("value")), fmt.Sprint(256+rng.Intn(1024)))}
		case 3: // container port
			return []jsonvalue.Path{setP(child(containers, jsonvalue.Key("ports"), jsonvalue.Name("http"), jsonvalue.Key("containerPort")), int64(8081+rng.Intn(100)))}
		default: // a label added by hand
			return []jsonvalue.Path{setP(child(labelsPath, jsonvalue.Key("oncall")), fmt.Sprintf("pager-%d", rng.Intn(50)))}
		}
	case "Service":
		return []jsonvalue.Path{setP(jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("ports"), jsonvalue.Index(0), jsonvalue.Key("port")}, int64(8000+rng.Intn(1000)))}
	case "ConfigMap":
		return []jsonvalue.Path{setP(jsonvalue.Path{jsonvalue.Key("data"), jsonvalue.Key("timeout")}, fmt.Sprintf("%ds", 60+rng.Intn(60)))}
	}
	return nil
}

// dress turns a rendered object into what the API server returns for it:
// server metadata, status, defaults nobody wrote, and managedFields in
// which the GitOps applier owns the render and an editor owns the drift.
func dress(obj, ren map[string]any, edits []jsonvalue.Path, uid string) map[string]any {
	meta := obj["metadata"].(map[string]any)
	meta["uid"] = "00000000-" + strings.NewReplacer("/", "-").Replace(uid)
	meta["resourceVersion"] = fmt.Sprint(1000 + len(uid))
	meta["generation"] = int64(1 + len(edits))
	meta["creationTimestamp"] = "2026-01-02T03:04:05Z"
	managed := []any{map[string]any{
		"manager": "kustomize-controller", "operation": "Apply", "apiVersion": obj["apiVersion"],
		"time": "2026-01-02T03:04:05Z", "fieldsType": "FieldsV1", "fieldsV1": fieldsOf(ren),
	}}
	if len(edits) > 0 {
		managed = append(managed, map[string]any{
			"manager": "kubectl-edit", "operation": "Update", "apiVersion": obj["apiVersion"],
			"time": "2026-02-03T04:05:06Z", "fieldsType": "FieldsV1", "fieldsV1": fieldsAt(obj, edits),
		})
	}
	meta["managedFields"] = managed
	switch obj["kind"] {
	case "Deployment":
		ann, _ := meta["annotations"].(map[string]any)
		if ann == nil {
			ann = map[string]any{}
			meta["annotations"] = ann
		}
		ann["deployment.kubernetes.io/revision"] = "1"
		spec := obj["spec"].(map[string]any)
		spec["progressDeadlineSeconds"] = int64(600)
		spec["revisionHistoryLimit"] = int64(10)
		spec["strategy"] = map[string]any{"type": "RollingUpdate",
			"rollingUpdate": map[string]any{"maxSurge": "25%", "maxUnavailable": "25%"}}
		pod := spec["template"].(map[string]any)["spec"].(map[string]any)
		pod["dnsPolicy"] = "ClusterFirst"
		pod["restartPolicy"] = "Always"
		pod["schedulerName"] = "default-scheduler"
		pod["securityContext"] = map[string]any{}
		pod["terminationGracePeriodSeconds"] = int64(30)
		for _, c := range pod["containers"].([]any) {
			c := c.(map[string]any)
			c["imagePullPolicy"] = "IfNotPresent"
			c["terminationMessagePath"] = "/dev/termination-log"
			c["terminationMessagePolicy"] = "File"
			if _, ok := c["resources"]; !ok {
				c["resources"] = map[string]any{}
			}
			if ports, ok := c["ports"].([]any); ok {
				for _, p := range ports {
					p.(map[string]any)["protocol"] = "TCP"
				}
			}
		}
		obj["status"] = map[string]any{"observedGeneration": int64(1), "replicas": spec["replicas"],
			"readyReplicas": spec["replicas"], "conditions": []any{map[string]any{"type": "Available", "status": "True"}}}
	case "Service":
		spec := obj["spec"].(map[string]any)
		spec["clusterIP"] = "10.96.0.10"
		spec["clusterIPs"] = []any{"10.96.0.10"}
		spec["ipFamilies"] = []any{"IPv4"}
		spec["ipFamilyPolicy"] = "SingleStack"
		spec["internalTrafficPolicy"] = "Cluster"
		spec["sessionAffinity"] = "None"
		spec["type"] = "ClusterIP"
		for _, p := range spec["ports"].([]any) {
			p.(map[string]any)["protocol"] = "TCP"
		}
		obj["status"] = map[string]any{"loadBalancer": map[string]any{}}
	}
	return obj
}

// fieldsOf is the FieldsV1 set of every leaf of v: maps by "f:key", lists
// of named maps by `k:{"name":...}`, other lists by value or position.
func fieldsOf(v any) map[string]any {
	out := map[string]any{}
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			out["f:"+k] = fieldsOf(c)
		}
	case []any:
		_, named := jsonvalue.ElementNames(t)
		for i, e := range t {
			switch {
			case named:
				out[nameKey(e.(map[string]any)["name"].(string))] = withDot(fieldsOf(e))
			case isScalar(e):
				b, _ := json.Marshal(e)
				out["v:"+string(b)] = map[string]any{}
			default:
				out[fmt.Sprintf("i:%d", i)] = withDot(fieldsOf(e))
			}
		}
	}
	return out
}

// fieldsAt is the FieldsV1 set of the given paths in obj.
func fieldsAt(obj map[string]any, paths []jsonvalue.Path) map[string]any {
	out := map[string]any{}
	for _, p := range paths {
		cur := out
		for _, s := range p {
			var k string
			switch s.Kind {
			case jsonvalue.KeyStep:
				k = "f:" + s.Key
			case jsonvalue.NameStep:
				k = nameKey(s.Key)
			case jsonvalue.IndexStep:
				k = fmt.Sprintf("i:%d", s.Index)
			}
			next, _ := cur[k].(map[string]any)
			if next == nil {
				next = map[string]any{}
				cur[k] = next
			}
			cur = next
		}
	}
	return out
}

func nameKey(n string) string {
	b, _ := json.Marshal(map[string]string{"name": n})
	return "k:" + string(b)
}

func withDot(m map[string]any) map[string]any {
	m["."] = map[string]any{}
	return m
}

func isScalar(v any) bool {
	switch v.(type) {
	case map[string]any, []any:
		return false
	}
	return true
}

// Reader reads one root's live snapshot as a poll does (the cluster
// package's ParseLive with its rules, which this package cannot import).
type Reader func(root string, data []byte) ([]kube.LiveObject, error)

// LiveObjects is Live read by read.
func (fx *Fixture) LiveObjects(drift float64, read Reader) (map[string][]kube.LiveObject, map[string]int, error) {
	data, drifted, err := fx.Live(drift)
	if err != nil {
		return nil, nil, err
	}
	out := make(map[string][]kube.LiveObject, len(data))
	for root, b := range data {
		if out[root], err = read(root, b); err != nil {
			return nil, nil, err
		}
	}
	return out, drifted, nil
}
