package bot

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/driftback/driftback/deploy/deploycheck"
	"github.com/driftback/driftback/internal/githubtest"
)

// TestMonitoringQueriesExportedMetrics: every metric that the alerts and
// the dashboard of deploy/components/monitoring query is one a running
// driftback serves on /metrics. (The Helm chart's copies are compared with
// these by tools/helm.) A metric series appears once something counts it,
// so the runner here goes through every event the queries watch: polls
// with edits, refusals and a commit, a poll that fails, a conditional GET
// answered 304, a secondary rate limit, and a Lease write the apiserver
// refused (as bot/shard reports it to the runner).
func TestMonitoringQueriesExportedMetrics(t *testing.T) {
	used := monitoringMetricNames(t)

	h := newHarness(t, exampleLive(t))
	h.srv.InjectFault(githubtest.Fault{Method: "POST", Path: "/repos/{owner}/{repo}/git/trees", SecondaryRateLimit: 1})
	broken := *h.target
	broken.Config.Name = "shop-broken"
	broken.Lister = brokenLister{}
	r := &Runner{Bot: h.bot, Targets: []*Target{h.target, &broken}, Interval: time.Hour}
	r.PollOnce(context.Background())
	r.PollOnce(context.Background())
	r.leaseWrote(errors.New(`leases.coordination.k8s.io "driftback-a" is invalid: metadata.annotations: Too long`))
	r.leaseWrote(nil)

	srv := httptestServer(t, r.Handler())
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	exported := exposedNames(string(body))

	var names []string
	for n := range used {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !exported[n] {
			t.Errorf("%s is queried (%s) but /metrics does not serve it", n, strings.Join(used[n], "; "))
		}
	}
	if t.Failed() {
		t.Logf("/metrics served:\n%s", body)
	}
}

// exposedNames reads metric names from the Prometheus text format; a
// histogram or summary also answers to its base name.
func exposedNames(text string) map[string]bool {
	names := map[string]bool{}
	sample := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{| )`)
	for line := range strings.Lines(text) {
		if strings.HasPrefix(line, "#") {
			continue
		}
		if m := sample.FindStringSubmatch(line); m != nil {
			names[m[1]] = true
			for _, suffix := range []string{"_bucket", "_sum", "_count"} {
				if base, ok := strings.CutSuffix(m[1], suffix); ok {
					names[base] = true
				}
			}
		}
	}
	return names
}

// monitoringMetricNames renders deploy/ with the monitoring component, as
// a user's overlay would, and returns the metric names its alerts and
// dashboard query.
func monitoringMetricNames(t *testing.T) map[string][]string {
	t.Helper()
	dir := t.TempDir()
	rel := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		r, err := filepath.Rel(dir, a)
		if err != nil {
			t.Fatal(err)
		}
		return filepath.ToSlash(r)
	}
	k := "resources:\n- " + rel("../deploy") + "\ncomponents:\n- " + rel("../deploy/components/monitoring") + "\n"
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = types.DisabledPluginConfig()
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var objs []*deploycheck.Object
	for _, r := range m.Resources() {
		data, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		o, err := deploycheck.NewObject(data)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	used, err := deploycheck.MetricNames(objs)
	if err != nil {
		t.Fatal(err)
	}
	if len(used) < 5 {
		t.Fatalf("the monitoring component queries only %v; the test would prove little", used)
	}
	return used
}
