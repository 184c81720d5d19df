package analyzer

import (
	"testing"

	"github.com/driftback/driftback/analyzer/dye"
	"github.com/driftback/driftback/analyzer/render"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
)

// reportImage is the CronJob report's container image in the routed fixture.
var reportImage = jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("jobTemplate"), jsonvalue.Key("spec"),
	jsonvalue.Key("template"), jsonvalue.Key("spec"), jsonvalue.Key("containers"), jsonvalue.Name("report"), jsonvalue.Key("image")}

// routeStage runs the stages up to routing, each on the output of the one
// before (render, pairObjects, runDye, planRoutes), and returns
// routing's result with what it refused. Nothing is projected, written or
// verified.
func routeStage(t *testing.T, repo *repofs.Repo, root string, live []map[string]any) (*routing, []Refusal) {
	t.Helper()
	s := NewSnapshot(repo, nil)
	k := &kustomizeRenderer{snap: s, root: root, plan: &Plan{}, o: &orchestration{repo: repo}}
	objects, ok, err := k.render()
	if err != nil || !ok {
		t.Fatalf("render: %v %+v", err, k.plan.Refusals)
	}
	b := k.base
	pairs := pairObjects(asLive(live), objects, nil, root).pairs
	dyed, err := runDye(repo, repo, b, pairs, false, func(string, ...any) {})
	if err != nil {
		t.Fatal(err)
	}
	w := &writability{repo: repo, forest: s.forest, rootFile: b.tree.Root.File, prov: dyed.Prov}
	var refused []Refusal
	rt := planRoutes(pairs, b, dyed.Suppliers, w, func(r Refusal) { refused = append(refused, r) })
	return rt, refused
}

func objID(kind, name string) render.ID {
	group := "apps"
	if kind == "CronJob" {
		group = "batch"
	}
	return render.ID{Group: group, Kind: kind, Namespace: "prod", Name: name}
}

// Both objects the overlay's images entry supplies run the new tag: routing
// alone plans one edit of that entry, carrying both, and claims both slots
// so that projecting keeps them out of the sources.
func TestRoutingStageRoutesASharedEntry(t *testing.T) {
	repo := fixture(t, "routed")
	live := renderedLive(t, repo, "overlays/prod")
	set(t, find(t, live, "Deployment", "api"), imagePath("containers", "api"), "example/api:2.0.0")
	set(t, find(t, live, "CronJob", "report"), reportImage, "example/api:2.0.0")
	rt, refused := routeStage(t, repo, "overlays/prod", live)
	if len(refused) != 0 || len(rt.routes) != 1 {
		t.Fatalf("routes %+v, refused %+v", rt.routes, refused)
	}
	r := rt.routes[0]
	if r.Entry.String() != "images[0] in overlays/prod/kustomization.yaml" || r.Field != dye.FieldNewTag || r.Value != "2.0.0" || r.Author != nil {
		t.Errorf("route = %s %s %v (author %v)", r.Entry, r.Field, r.Value, r.Author)
	}
	api := dye.Slot{Obj: objID("Deployment", "api"), Path: imagePath("containers", "api")}
	report := dye.Slot{Obj: objID("CronJob", "report"), Path: reportImage}
	if len(r.Slots) != 2 || !carries(r.Slots, api.Obj, api.Path) || !carries(r.Slots, report.Obj, report.Path) {
		t.Errorf("slots = %v", r.Slots)
	}
	for _, s := range []dye.Slot{api, report} {
		sk := dye.SlotKey{Obj: s.Obj, Path: s.Path.String(), Field: dye.FieldNewTag}
		if !rt.supplied[sk] || rt.conflicted[sk] {
			t.Errorf("%s: supplied %v, conflicted %v", s.Key(), rt.supplied[sk], rt.conflicted[sk])
		}
	}
	// The feedback edge: a later stage giving up one object's field takes
	// the whole route back, the other object's slot with it.
	w := &writes{routing: rt, placing: &placing{}}
	w.takeBack(api.Obj, api.Path)
	if len(rt.routes) != 0 {
		t.Errorf("takeBack left %+v", rt.routes)
	}
}

// Only one of the two objects the entry supplies moved: routing alone
// refuses the conflict, routes nothing, and marks the moved slot
// conflicted (verify then expects its rendered value).
func TestRoutingStageRefusesASharedEntryConflict(t *testing.T) {
	repo := fixture(t, "routed")
	live := renderedLive(t, repo, "overlays/prod")
	set(t, find(t, live, "Deployment", "api"), imagePath("containers", "api"), "example/api:2.0.0")
	rt, refused := routeStage(t, repo, "overlays/prod", live)
	if len(rt.routes) != 0 || len(refused) != 1 || refused[0].Code != CodeSharedEntryConflict || refused[0].Object.Name != "api" {
		t.Fatalf("routes %+v, refused %+v", rt.routes, refused)
	}
	sk := dye.SlotKey{Obj: objID("Deployment", "api"), Path: imagePath("containers", "api").String(), Field: dye.FieldNewTag}
	if !rt.supplied[sk] || !rt.conflicted[sk] {
		t.Errorf("api's tag: supplied %v, conflicted %v", rt.supplied[sk], rt.conflicted[sk])
	}
}

// projectStage runs the stages up to projecting, each on the output of the
// one before, and returns the projection with the plan so far. Nothing is
// written or verified.
func projectStage(t *testing.T, repo *repofs.Repo, root string, live []map[string]any) (*projection, *Plan) {
	t.Helper()
	s := NewSnapshot(repo, nil)
	plan := &Plan{}
	k, err := s.kustomize(root, Options{}, plan)
	if err != nil || k == nil {
		t.Fatalf("kustomize: %v %+v", err, plan.Refusals)
	}
	objects, ok, err := k.render()
	if err != nil || !ok {
		t.Fatalf("render: %v %+v", err, plan.Refusals)
	}
	p, err := k.attribute(pairObjects(asLive(live), objects, nil, root), Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	a := p.(*kustomizePlacer)
	if err := a.planWrites(); err != nil {
		t.Fatal(err)
	}
	return a.project(), plan
}

// The overlay's images entry carries both objects' new tag and the
// CronJob's schedule changed in its base: projecting alone rewrites the
// base document for the schedule only, keeps the Deployment as a candidate
// its entry route alone carries, and writes nothing yet.
func TestProjectStageKeepsRoutedFieldsOutOfTheSource(t *testing.T) {
	repo := fixture(t, "routed")
	live := renderedLive(t, repo, "overlays/prod")
	set(t, find(t, live, "Deployment", "api"), imagePath("containers", "api"), "example/api:2.0.0")
	report := find(t, live, "CronJob", "report")
	set(t, report, reportImage, "example/api:2.0.0")
	set(t, report, jsonvalue.ParseSimple("spec.schedule"), "0 4 * * *")
	pj, plan := projectStage(t, repo, "overlays/prod", live)
	if len(plan.Refusals) != 0 || len(plan.Edits) != 0 || len(plan.Files) != 0 {
		t.Fatalf("refusals %+v, edits %+v, files %+v", plan.Refusals, plan.Edits, plan.Files)
	}
	got := map[string]*candidate{}
	for _, c := range pj.candidates {
		got[c.ren.ID.Kind+"/"+c.ren.ID.Name] = c
	}
	if len(pj.candidates) != 2 || got["Deployment/api"] == nil || got["CronJob/report"] == nil {
		t.Fatalf("candidates %v", got)
	}
	if c := got["CronJob/report"]; c.file != "base/jobs.yaml" || joinPaths(c.changed) != "spec.schedule" || c.over != nil {
		t.Errorf("report: file %q, changed %v, override %v", c.file, c.changed, c.over)
	} else if v, _ := jsonvalue.Get(c.want, jsonvalue.ParseSimple("spec.schedule")); v != "0 4 * * *" {
		t.Errorf("report's source form holds schedule %v", v)
	}
	if c := got["Deployment/api"]; c.file != "" || len(c.changed) != 0 {
		t.Errorf("api: file %q, changed %v; the entry route carries its tag", c.file, c.changed)
	}
}

// otherRenderer is a renderer that is not kustomize's: it hands back the
// objects it was given and is its own placer, recording what the
// pipeline passed it. It pins the seam a second renderer implements.
type otherRenderer struct {
	objects []render.Object
	refuse  bool
	paired  *pairing
	scope   string
	placed  bool
}

func (o *otherRenderer) render() ([]render.Object, bool, error) { return o.objects, !o.refuse, nil }

func (o *otherRenderer) attribute(p *pairing, opts Options, _ bool) (placer, error) {
	o.paired, o.scope = p, opts.WriteScope
	return o, nil
}

func (o *otherRenderer) place() error {
	o.placed = true
	return nil
}

// planWith knows renderers only through the interface: any renderer's
// objects are paired with live, its attribution gets the pairs and the
// cleaned write scope, and its placer runs; a refused render stops there.
func TestPlanWithRunsAnyRenderer(t *testing.T) {
	repo := fixture(t, "routed")
	live := renderedLive(t, repo, "overlays/prod")
	set(t, find(t, live, "CronJob", "report"), jsonvalue.ParseSimple("spec.schedule"), "0 4 * * *")
	other := &otherRenderer{objects: mustBuild(t, repo, "overlays/prod").objects}
	plan := &Plan{}
	if err := planWith(other, plan, asLive(live), Options{WriteScope: "overlays/prod/"}, false); err != nil {
		t.Fatal(err)
	}
	if !other.placed || other.scope != "overlays/prod" || len(plan.Kinds) == 0 {
		t.Fatalf("placed %v, scope %q, kinds %v", other.placed, other.scope, plan.Kinds)
	}
	var drifted []string
	for _, p := range other.paired.pairs {
		if !p.inSync {
			drifted = append(drifted, p.ren.ID.Kind+"/"+p.ren.ID.Name)
		}
	}
	if len(other.paired.pairs) != len(other.objects) || len(drifted) != 1 || drifted[0] != "CronJob/report" {
		t.Errorf("%d pairs of %d objects, drifted %v", len(other.paired.pairs), len(other.objects), drifted)
	}
	refused := &otherRenderer{objects: other.objects, refuse: true}
	if err := planWith(refused, &Plan{}, asLive(live), Options{}, false); err != nil || refused.paired != nil || refused.placed {
		t.Errorf("a refused render went on: err %v, attributed %v, placed %v", err, refused.paired != nil, refused.placed)
	}
}
