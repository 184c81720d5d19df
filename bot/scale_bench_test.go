package bot

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/synth"
)

// BenchmarkScaleIdleCycle is issue 17's scale target on a real apiserver:
// 100 targets of 30 objects each on one cluster (the synthetic repository,
// server-side applied by kustomize-controller, nothing drifted), client
// rate at the config's defaults. One op is an idle poll of every target:
// it must read each kind at most once, write nothing to GitHub and get
// only 304s there.
func BenchmarkScaleIdleCycle(b *testing.B) {
	const targets, objects = 100, 30
	env := apiserver(b)
	fx, err := synth.NewRepo(1, targets, objects)
	if err != nil {
		b.Fatal(err)
	}
	files := map[string][]byte{}
	for _, p := range fx.Repo.Paths() {
		files[p], _ = fx.Repo.File(p)
	}
	h := newHarness(b, "")
	h.srv.CreateRepo(owner, "fleet", "main", files)
	applyRoots(b, env.Config, fx)

	var cfgText strings.Builder
	cfgText.WriteString("github: {appID: 4242, privateKeyFile: /dev/null, installationID: 99}\nclusters: [{name: prod, inCluster: true}]\ntargets:\n")
	for i, root := range fx.Roots {
		fmt.Fprintf(&cfgText, "- {name: t%03d, repo: acme/fleet, baseBranch: main, root: %s, cluster: prod, namespaces: [%s], appliedRevision: {head: true}}\n", i, root, namespaceOf(b, fx, root))
	}
	cfg, err := config.Parse("driftback.yaml", []byte(cfgText.String()))
	if err != nil {
		b.Fatal(err)
	}
	var log requestLog
	rc := log.on(env.Config)
	rc.QPS, rc.Burst = config.DefaultQPS, config.DefaultBurst
	l, err := cluster.NewClientLister(rc)
	if err != nil {
		b.Fatal(err)
	}
	r := &Runner{Bot: h.bot, Interval: time.Minute}
	for _, t := range cfg.ResolvedTargets() {
		r.Targets = append(r.Targets, &Target{Config: *t, Lister: l})
	}
	ctx := context.Background()
	// Rounds are a poll interval apart, as in production: GitHub's
	// per-minute secondary limit (900 points) sees one round a minute.
	round := func() {
		h.clock.Advance(r.Interval)
		r.PollOnce(ctx)
	}
	round()
	round() // primes every conditional request
	for _, t := range r.Targets {
		if r.Bot.Metrics.Get("driftback_poll_errors_total", map[string]string{"target": t.Config.Name}) != 0 {
			b.Fatalf("the poll of %s failed", t.Config.Name)
		}
	}
	log.lists()
	log.traffic()
	before := h.srv.Counters()
	b.ResetTimer()
	for b.Loop() {
		round()
	}
	b.StopTimer()
	n := float64(b.N)
	most := 0
	for _, c := range log.lists() {
		most = max(most, c)
	}
	d := h.srv.Counters().Sub(before)
	requests, bytes := log.traffic()
	b.ReportMetric(float64(requests)/n, "apiserver-requests/op")
	b.ReportMetric(float64(bytes)/n, "apiserver-bytes/op")
	b.ReportMetric(float64(most)/n, "max-lists-per-kind/op")
	b.ReportMetric(float64(d.Mutating)/n, "github-writes/op")
	b.ReportMetric(float64(d.Requests-d.NotModified)/n, "github-non-304/op")
	b.ReportMetric(float64(d.Requests)/n, "github-requests/op")
	if most > b.N || d.Mutating != 0 || d.Requests != d.NotModified {
		b.Fatalf("an idle cycle listed a kind %d times in %d cycles, wrote %d times and made %d requests that were not 304s", most, b.N, d.Mutating, d.Requests-d.NotModified)
	}
}

// namespaceOf is the namespace root's objects render into.
func namespaceOf(tb testing.TB, fx *synth.Fixture, root string) string {
	fs, err := fx.Repo.FS()
	if err != nil {
		tb.Fatal(err)
	}
	objs, err := synth.Build(fs, root)
	if err != nil || len(objs) == 0 {
		tb.Fatalf("render %s: %v", root, err)
	}
	return objs[0]["metadata"].(map[string]any)["namespace"].(string)
}

// applyRoots server-side applies every root's render as
// kustomize-controller, creating the namespaces first.
func applyRoots(tb testing.TB, cfg *rest.Config, fx *synth.Fixture) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	fs, err := fx.Repo.FS()
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	apply := func(obj map[string]any) {
		u := &unstructured.Unstructured{Object: obj}
		m, err := mapper.RESTMapping(u.GroupVersionKind().GroupKind(), u.GroupVersionKind().Version)
		if err != nil {
			tb.Fatal(err)
		}
		data, err := u.MarshalJSON()
		if err != nil {
			tb.Fatal(err)
		}
		force := true
		_, err = dyn.Resource(m.Resource).Namespace(u.GetNamespace()).Patch(ctx, u.GetName(), types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: "kustomize-controller", Force: &force})
		if err != nil {
			tb.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for _, root := range fx.Roots {
		objs, err := synth.Build(fs, root)
		if err != nil {
			tb.Fatal(err)
		}
		for _, o := range objs {
			ns := o["metadata"].(map[string]any)["namespace"].(string)
			if !seen[ns] {
				seen[ns] = true
				apply(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}})
			}
			if o["kind"] == "Service" {
				// The test apiserver's service range is small: headless
				// Services need no IP. The field is the applier's and
				// absent from the render, so it reads as a default.
				o["spec"].(map[string]any)["clusterIP"] = "None"
			}
			apply(o)
		}
	}
}
