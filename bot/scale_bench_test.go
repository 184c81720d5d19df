package bot

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/kubetest"
	"github.com/driftback/driftback/internal/synth"
)

// scaleWorld is targets targets of objects objects each on one cluster
// (the synthetic repository, server-side applied by kustomize-controller,
// nothing drifted) and one repository, polled by one runner whose lister
// counts its apiserver requests, client rate at the config's defaults.
type scaleWorld struct {
	h   *harness
	env *kubetest.Env
	fx  *synth.Fixture
	r   *Runner
	log *requestLog
	// targets is the config's targets: list, for a bot process of its own.
	targets string
}

func newScaleWorld(b *testing.B, targets, objects int) *scaleWorld {
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

	// One filesystem for every root: making it is linear in the roots, so
	// once per root is quadratic (minutes at 10,000).
	fsys, err := fx.Repo.FS()
	if err != nil {
		b.Fatal(err)
	}
	var targetsText strings.Builder
	for i, root := range fx.Roots {
		fmt.Fprintf(&targetsText, "- {name: t%04d, repo: acme/fleet, baseBranch: main, root: %s, cluster: prod, namespaces: [%s], appliedRevision: {head: true}}\n", i, root, namespaceOf(b, fsys, root))
	}
	cfgText := "github: {appID: 4242, privateKeyFile: /dev/null, installationID: 99}\nclusters: [{name: prod, inCluster: true}]\ntargets:\n" + targetsText.String()
	cfg, err := config.Parse("driftback.yaml", []byte(cfgText))
	if err != nil {
		b.Fatal(err)
	}
	w := &scaleWorld{h: h, env: env, fx: fx, log: &requestLog{}, targets: targetsText.String()}
	rc := w.log.on(env.Config)
	rc.QPS, rc.Burst = config.DefaultQPS, config.DefaultBurst
	l, err := cluster.NewClientLister(rc)
	if err != nil {
		b.Fatal(err)
	}
	// As `run` does: the kinds a round lists across the cluster are kept
	// by watches from their first list.
	ctx, stop := context.WithCancel(context.Background())
	b.Cleanup(stop)
	if err := l.KeepWatched(ctx); err != nil {
		b.Fatal(err)
	}
	w.r = &Runner{Bot: h.bot, Interval: time.Minute}
	for _, t := range cfg.ResolvedTargets() {
		w.r.Targets = append(w.r.Targets, &Target{Config: *t, Lister: l})
	}
	return w
}

// round is one poll of every target, a poll interval after the last, as
// in production: GitHub's per-minute secondary limit sees one round a
// minute.
func (w *scaleWorld) round() {
	w.h.clock.Advance(w.r.Interval)
	w.r.PollOnce(context.Background())
}

// settle polls until every target has reconciled once and is remembered
// (its next poll can be idle), and fails if any poll failed for good. The
// first rounds post a check run per target, paced by the hourly write
// budget (450, the last tenth kept for pull requests): a thousand targets
// need about two and a half hours of it, so each settling round moves the
// clock 20 minutes.
func (w *scaleWorld) settle(b *testing.B) {
	for i := 0; ; i++ {
		pending := 0
		for _, t := range w.r.Targets {
			if _, ok := w.r.Bot.memory.Get(t.Config.Name); !ok {
				pending++
			}
		}
		if pending == 0 && i > 0 {
			break
		}
		if i == 100 {
			b.Fatalf("%d targets never settled", pending)
		}
		w.h.clock.Advance(20 * time.Minute)
		w.round()
	}
	w.round() // primes every conditional request
	w.log.lists()
	w.log.traffic()
}

// BenchmarkScaleIdleCycle is issue 17's scale target on a real apiserver:
// 100 targets of 30 objects each. One op is an idle poll of every target:
// it must read each kind at most once, write nothing to GitHub and get
// only 304s there.
func BenchmarkScaleIdleCycle(b *testing.B) {
	w := newScaleWorld(b, 100, 30)
	w.settle(b)
	before := w.h.srv.Counters()
	b.ResetTimer()
	for b.Loop() {
		w.round()
	}
	b.StopTimer()
	n := float64(b.N)
	most := 0
	for _, c := range w.log.lists() {
		most = max(most, c)
	}
	d := w.h.srv.Counters().Sub(before)
	requests, bytes := w.log.traffic()
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
func namespaceOf(tb testing.TB, fsys filesys.FileSystem, root string) string {
	objs, err := synth.Build(fsys, root)
	if err != nil || len(objs) == 0 {
		tb.Fatalf("render %s: %v", root, err)
	}
	return objs[0]["metadata"].(map[string]any)["namespace"].(string)
}

// fluxApplier returns a function that server-side applies an object as
// kustomize-controller does (forcing conflicts), its resource found by
// discovery.
func fluxApplier(tb testing.TB, cfg *rest.Config) func(obj map[string]any) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	return func(obj map[string]any) {
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
		_, err = dyn.Resource(m.Resource).Namespace(u.GetNamespace()).Patch(context.Background(), u.GetName(), types.ApplyPatchType, data,
			metav1.PatchOptions{FieldManager: "kustomize-controller", Force: &force})
		if err != nil {
			tb.Fatalf("apply %s/%s: %v", u.GetKind(), u.GetName(), err)
		}
	}
}

// applyRoots server-side applies every root's render as
// kustomize-controller, creating the namespaces first.
func applyRoots(tb testing.TB, cfg *rest.Config, fx *synth.Fixture) {
	fs, err := fx.Repo.FS()
	if err != nil {
		tb.Fatal(err)
	}
	apply := fluxApplier(tb, cfg)
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

// BenchmarkScale is issue 44's thousand targets on one replica: targets of
// 10 objects each on the real apiserver, all in one repository of the
// in-process GitHub, settled first (every target planned and its check run
// posted). Sub-benchmarks, each op one round of every target:
//
//	idle        nothing changed
//	base-moved  a commit to the base branch that touches no root
//	drift=1%    1% of the targets drift (a hand-scaled Deployment each)
//	latency     Run polling every 10 s beside a target whose cluster read
//	            takes 45 s; 1% of the targets drift at once; each op is
//	            the wait from the edits to the last of their pull requests
//
// Reported per op: wall time, CPU seconds of this process (the bot, the
// in-process GitHub and the test; the apiserver runs apart), GitHub
// requests and writes, apiserver requests; and the process's peak RSS.
// Run alone (its own go test): the apiserver is shared by the process.
func BenchmarkScale(b *testing.B) {
	for _, targets := range []int{1000} {
		b.Run(fmt.Sprintf("targets=%d", targets), func(b *testing.B) {
			w := newScaleWorld(b, targets, 10)
			w.settle(b)
			b.Run("idle", func(b *testing.B) { w.measure(b, func(int) {}) })
			b.Run("base-moved", func(b *testing.B) {
				w.measure(b, func(i int) {
					w.h.srv.Commit(owner, "fleet", "main", "someone", map[string][]byte{"README.md": fmt.Appendf(nil, "round %d\n", i)})
				})
			})
			drifted := 0
			b.Run("drift=1%", func(b *testing.B) {
				w.measure(b, func(int) {
					for range max(1, targets/100) {
						w.drift(b, drifted%targets)
						drifted++
					}
				})
			})
			b.Run("latency", func(b *testing.B) { w.latency(b, max(1, targets/100), &drifted) })
		})
	}
}

// measure runs b.N rounds, each after before(i), and reports their costs.
func (w *scaleWorld) measure(b *testing.B, before func(i int)) {
	gh := w.h.srv.Counters()
	w.log.traffic()
	var spent time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		before(i)
		c := cpuTime()
		b.StartTimer()
		w.round()
		b.StopTimer()
		spent += cpuTime() - c
	}
	n := float64(b.N)
	d := w.h.srv.Counters().Sub(gh)
	requests, _ := w.log.traffic()
	b.ReportMetric(spent.Seconds()/n, "cpu-s/op")
	b.ReportMetric(float64(d.Requests)/n, "github-requests/op")
	b.ReportMetric(float64(d.Mutating)/n, "github-writes/op")
	b.ReportMetric(float64(requests)/n, "apiserver-requests/op")
	rss, _ := peakRSS()
	b.ReportMetric(float64(rss)/(1<<20), "peak-rss-MiB")
}

// drift hand-scales the Deployment app-00 of root i, as kubectl scale would.
func (w *scaleWorld) drift(b *testing.B, i int) {
	dyn, err := dynamic.NewForConfig(w.env.Config)
	if err != nil {
		b.Fatal(err)
	}
	fsys, err := w.fx.Repo.FS()
	if err != nil {
		b.Fatal(err)
	}
	ns := namespaceOf(b, fsys, w.fx.Roots[i])
	gvr := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	patch := fmt.Appendf(nil, `{"spec":{"replicas":%d}}`, 7+i%5)
	if _, err := dyn.Resource(gvr).Namespace(ns).Patch(context.Background(), "app-00", types.MergePatchType, patch,
		metav1.PatchOptions{FieldManager: "kubectl-scale"}, "scale"); err != nil {
		b.Fatal(err)
	}
}
