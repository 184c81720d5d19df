package discover_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/bot/discover"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/repofs"
)

const applied = "0123456789abcdef0123456789abcdef01234567"

// clusterObjects is a cluster as Flux leaves it: the GitRepository of
// acme/fleet, the Kustomization "apps" that applied the folder
// clusters/prod at the commit applied (with kustomization's own extra
// spec), and the HelmRelease web/web it applied, whose chart is the
// folder charts/web of the same GitRepository.
func clusterObjects(kustSpec, release string) string {
	return `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: flux-system, namespace: flux-system}
spec: {url: https://github.com/acme/fleet, ref: {branch: main}}
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: apps, namespace: flux-system}
spec:
  path: ./clusters/prod
  sourceRef: {kind: GitRepository, name: flux-system}
` + kustSpec + `status:
  lastAppliedRevision: main@sha1:` + applied + `
  inventory: {entries: [{id: web_web_helm.toolkit.fluxcd.io_HelmRelease, v: v2}]}
---
` + release
}

// webRelease is the HelmRelease web/web as applied: labelled by the
// Kustomization apps, its chart from the GitRepository.
const webRelease = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
  namespace: web
  labels: {kustomize.toolkit.fluxcd.io/name: apps, kustomize.toolkit.fluxcd.io/namespace: flux-system}
spec:
  interval: 5m
  chart: {spec: {chart: charts/web, sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}}}
`

// releaseFile is the HelmRelease web as its file in Git declares it.
const releaseFile = `apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata:
  name: web
  namespace: web
spec:
  interval: 5m
  chart:
    spec:
      chart: charts/web
      sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}
  values:
    replicas: 2
`

// fleet is acme/fleet at the commit applied: clusters/prod holds the
// kustomization (given) and the release's file (given).
func fleet(t *testing.T, files map[string]string) *repofs.Repo {
	t.Helper()
	r := repofs.New()
	for p, s := range files {
		if err := r.Add(p, []byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// discovered is what Flux discovery finds among the objects.
func discovered(t *testing.T, objects string) []cluster.Discovered {
	t.Helper()
	objs, err := cluster.ParseObjectFile("live.yaml", []byte(objects))
	if err != nil {
		t.Fatal(err)
	}
	found, err := cluster.DiscoverIn(objs, cluster.DiscoverFilter{Flux: true})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

type located struct {
	d     discover.Discovery
	loads []string
}

// locate discovers the objects, finds each HelmRelease's file in repo
// (the commit asked for, when repo is not nil) and makes the targets of
// cluster prod for owner acme.
func locate(t *testing.T, cfg *config.Config, objects string, repo *repofs.Repo) located {
	t.Helper()
	found := discovered(t, objects)
	var out located
	load := func(_ context.Context, owner, name, sha string) (*analyzer.Snapshot, error) {
		out.loads = append(out.loads, owner+"/"+name+"@"+sha)
		if repo == nil {
			return nil, nil
		}
		return analyzer.NewSnapshot(repo, nil), nil
	}
	if err := discover.LocateReleases(context.Background(), load, "github.com", cfg.GitHub.Owner, found); err != nil {
		t.Fatal(err)
	}
	out.d = discover.Targets(cfg, "prod", "github.com", found)
	return out
}

func acme(targets ...config.Target) *config.Config {
	return &config.Config{GitHub: config.GitHub{Owner: "acme"}, Targets: targets}
}

// helmTarget is the target made of web/web, or nil.
func helmTarget(d discover.Discovery) *config.Target {
	for _, dt := range d.Targets {
		if dt.Config.AppliedRevision.HelmRelease != nil {
			return &dt.Config
		}
	}
	return nil
}

func skippedRelease(d discover.Discovery) string {
	for _, s := range d.Skipped {
		if strings.HasPrefix(s, "Flux HelmRelease ") {
			return s
		}
	}
	return ""
}

// A HelmRelease applied by a Flux Kustomization from the repository its
// chart is in becomes a target: its root is the file that declares it, at
// the commit the Kustomization applied, its applied revision is the
// HelmRelease, and it is named as a Kustomization's target is, with
// "helm" for the tool. The Kustomization stays a target of its own.
func TestReleaseBecomesTarget(t *testing.T) {
	repo := fleet(t, map[string]string{
		"clusters/prod/kustomization.yaml":     "resources: [web]\n",
		"clusters/prod/web/kustomization.yaml": "resources: [release.yaml]\n",
		"clusters/prod/web/release.yaml":       releaseFile,
		"charts/web/Chart.yaml":                "apiVersion: v2\nname: web\nversion: 0.1.0\n",
	})
	got := locate(t, acme(), clusterObjects("", webRelease), repo)
	tc := helmTarget(got.d)
	if tc == nil {
		t.Fatalf("no HelmRelease target: %v", got.d.Skipped)
	}
	want := config.Target{Name: "prod-helm-web-web", Repo: "acme/fleet", BaseBranch: "main", Root: "clusters/prod/web/release.yaml", Cluster: "prod"}
	if tc.Name != want.Name || tc.Repo != want.Repo || tc.BaseBranch != want.BaseBranch || tc.Root != want.Root || tc.Cluster != want.Cluster ||
		*tc.AppliedRevision.HelmRelease != (kube.ObjectRef{Namespace: "web", Name: "web"}) || tc.AppliedRevision.Flux != nil {
		t.Errorf("target %+v, want %+v with helmRelease web/web", tc, want)
	}
	if len(got.loads) != 1 || got.loads[0] != "acme/fleet@"+applied {
		t.Errorf("loaded %v, want acme/fleet at the commit the Kustomization applied", got.loads)
	}
	if len(got.d.Targets) != 2 || got.d.Targets[0].Config.Name != "prod-flux-flux-system-apps" {
		t.Errorf("targets %+v, want the Kustomization's beside the HelmRelease's", got.d.Targets)
	}
}

// A HelmRelease whose file is not the whole truth of what was applied, or
// that cannot be a HelmRelease target, is skipped with the reason, never
// made a target. One a written target covers is not made twice.
func TestReleaseSkipped(t *testing.T) {
	base := map[string]string{
		"clusters/prod/kustomization.yaml": "resources: [release.yaml]\n",
		"clusters/prod/release.yaml":       releaseFile,
	}
	with := func(changes map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range changes {
			out[k] = v
		}
		return out
	}
	relabel := func(from, to string) string { return strings.Replace(webRelease, from, to, 1) }
	written := func(tc config.Target) *config.Config {
		tc.Cluster, tc.Repo = "prod", "acme/fleet"
		return acme(tc)
	}
	for _, c := range []struct {
		name     string
		cfg      *config.Config
		kustSpec string
		release  string
		files    map[string]string // nil: the commit is not there
		want     string
	}{
		{name: "patched by the kustomization", release: webRelease, files: with(map[string]string{"clusters/prod/kustomization.yaml": `resources: [release.yaml]
patches:
- target: {kind: HelmRelease, name: web}
  patch: |
    - {op: replace, path: /spec/values/replicas, value: 3}
`}), want: "changes the HelmRelease's spec"},
		{name: "patched by the Flux Kustomization", release: webRelease, files: base, kustSpec: `  patches:
  - target: {kind: HelmRelease}
    patch: |
      - {op: add, path: /spec/values/extra, value: x}
`, want: "changes the HelmRelease's spec"},
		{name: "name prefix", release: relabel("name: web\n", "name: pre-web\n"), files: with(map[string]string{"clusters/prod/kustomization.yaml": "namePrefix: pre-\nresources: [release.yaml]\n"}),
			want: "names the HelmRelease web, applied as pre-web"},
		{name: "moved to another namespace", release: relabel("namespace: web\n", "namespace: apps\n"), files: with(map[string]string{"clusters/prod/kustomization.yaml": "namespace: apps\nresources: [release.yaml]\n"}),
			want: "puts the HelmRelease in namespace web, applied in apps"},
		{name: "namespace only from the kustomization", release: webRelease, files: with(map[string]string{
			"clusters/prod/kustomization.yaml": "namespace: web\nresources: [release.yaml]\n",
			"clusters/prod/release.yaml":       strings.Replace(releaseFile, "  namespace: web\n", "", 1)}),
			want: "names no namespace for the HelmRelease"},
		{name: "variables substituted", release: webRelease, kustSpec: "  postBuild: {substitute: {n: \"3\"}}\n", files: with(map[string]string{
			"clusters/prod/release.yaml": strings.Replace(releaseFile, "replicas: 2", "replicas: ${n}", 1)}),
			want: "holds ${...} variables"},
		{name: "not in the folder", release: webRelease, files: with(map[string]string{"clusters/prod/kustomization.yaml": "resources: []\n"}),
			want: "renders no HelmRelease web/web"},
		{name: "several in the file", release: webRelease, files: with(map[string]string{
			"clusters/prod/release.yaml": releaseFile + "---\n" + strings.Replace(releaseFile, "name: web\n", "name: api\n", 1)}),
			want: "holds several HelmReleases"},
		{name: "commit gone", release: webRelease, want: "acme/fleet has no commit " + applied},
		{name: "chart from a HelmRepository", release: relabel("kind: GitRepository, name: flux-system, namespace: flux-system", "kind: HelmRepository, name: charts"),
			want: "its chart comes from the HelmRepository charts (spec.chart.spec.sourceRef), not a folder of a GitRepository: charts from a HelmRepository, an OCIRepository or a HelmChart of spec.chartRef are not supported yet"},
		{name: "chart from an OCIRepository", release: relabel("chart: {spec: {chart: charts/web, sourceRef: {kind: GitRepository, name: flux-system, namespace: flux-system}}}", "chartRef: {kind: OCIRepository, name: web}"),
			want: "its chart comes from the OCIRepository web (spec.chartRef), not a folder of a GitRepository"},
		{name: "applied by no Kustomization", release: relabel("  labels: {kustomize.toolkit.fluxcd.io/name: apps, kustomize.toolkit.fluxcd.io/namespace: flux-system}\n", ""),
			want: "no Flux Kustomization applied it"},
		{name: "chart in another repository", release: relabel("name: flux-system, namespace: flux-system}}}", "name: charts, namespace: flux-system}}}") + `---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: charts, namespace: flux-system}
spec: {url: https://github.com/acme/charts, ref: {branch: main}}
`, files: base, want: "is not the repository and branch of the Flux Kustomization flux-system/apps"},
		{name: "written by hand as its object", cfg: written(config.Target{Name: "web", Root: "clusters/prod/release.yaml", AppliedRevision: config.AppliedRevision{HelmRelease: &kube.ObjectRef{Namespace: "web", Name: "web"}}}),
			release: webRelease, files: base, want: "a target written in the config covers it"},
		{name: "written by hand as its file", cfg: written(config.Target{Name: "web", Root: "clusters/prod/release.yaml"}),
			release: webRelease, files: base, want: "a target written in the config covers it"},
		{name: "name taken", cfg: acme(config.Target{Name: "prod-helm-web-web", Cluster: "other", Repo: "acme/other", Root: "."}),
			release: webRelease, files: base, want: "a target of the config is already named prod-helm-web-web"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			if cfg == nil {
				cfg = acme()
			}
			var repo *repofs.Repo
			if c.files != nil {
				repo = fleet(t, c.files)
			}
			got := locate(t, cfg, clusterObjects(c.kustSpec, c.release), repo)
			if tc := helmTarget(got.d); tc != nil {
				t.Fatalf("made target %+v", tc)
			}
			if s := skippedRelease(got.d); !strings.Contains(s, c.want) {
				t.Errorf("skipped as %q, want %q (all: %v)", s, c.want, got.d.Skipped)
			}
		})
	}
}

// A command that reads no repository (targets, the demo) makes no target
// of a HelmRelease, and says so: its root is not known.
func TestReleaseNotLocated(t *testing.T) {
	found := discovered(t, clusterObjects("", webRelease))
	d := discover.Targets(acme(), "prod", "github.com", found)
	if helmTarget(d) != nil || !strings.Contains(skippedRelease(d), "was not looked for") {
		t.Errorf("targets %+v, skipped %v", d.Targets, d.Skipped)
	}
}

// A repository that cannot be read fails the search, and so discovery:
// never a target dropped on a transient error.
func TestReleaseLoadFails(t *testing.T) {
	found := discovered(t, clusterObjects("", webRelease))
	boom := errors.New("GitHub answered 502")
	err := discover.LocateReleases(context.Background(), func(context.Context, string, string, string) (*analyzer.Snapshot, error) { return nil, boom }, "github.com", "acme", found)
	if !errors.Is(err, boom) {
		t.Errorf("error %v, want the load's", err)
	}
}
