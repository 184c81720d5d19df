package commands

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/fluxtest"
)

// driftback against Flux's real helm-controller (issue 56): the repository
// of examples/helm (a chart folder and a HelmRelease whose chart is that
// folder of the same GitRepository) is cloned by source-controller, the
// HelmRelease applied by kustomize-controller, the chart installed and
// upgraded by helm-controller. A person's kubectl set image and kubectl
// scale on the installed Deployment come back as one pull request editing
// the two values lines; merged, Flux upgrades the release, and the target
// is in sync.

const helmE2EConfig = `github: {appID: 1, privateKeyEnv: UNUSED, owner: acme}
clusters: [{name: prod, inCluster: true}]
targets:
- {name: web, repo: acme/fleet, baseBranch: main, root: clusters/prod/web/helmrelease.yaml, cluster: prod, namespaces: [shop], appliedRevision: {helmRelease: {namespace: shop, name: web}}}
`

// helmE2EFleet is examples/helm. The test apiserver runs no
// kube-controller-manager, so no Deployment ever reports ready: the
// release is installed and upgraded without waiting for it.
func helmE2EFleet(t *testing.T) map[string][]byte {
	files, err := exampleRepo(os.DirFS(".."), "examples/helm")
	if err != nil {
		t.Fatal(err)
	}
	const root = "clusters/prod/web/helmrelease.yaml"
	hr := string(files[root])
	if !strings.Contains(hr, "  interval: 10m\n") {
		t.Fatalf("%s changed: no spec.interval line to put the waits after:\n%s", root, hr)
	}
	files[root] = []byte(strings.Replace(hr, "  interval: 10m\n", "  interval: 10m\n  install:\n    disableWait: true\n  upgrade:\n    disableWait: true\n", 1))
	return files
}

func TestFluxHelmControllerEndToEnd(t *testing.T) {
	e := newE2E(t, fluxtest.Options{SourceController: true, HelmController: true}, helmE2EConfig)
	// The HelmRelease names its source as `flux bootstrap` does.
	e.clone("flux-system", helmE2EFleet(t))
	e.create(namespacesGVR, "", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop"}})
	e.flux.CreateKustomization(t, fluxtest.Kustomization{Name: "web", Path: "./clusters/prod/web", Source: e.source, Interval: "1h"})
	e.flux.WaitApplied(t, "web", e.rev)
	if v := e.flux.WaitHelmRelease(t, "shop", "web", e.rev); v != 1 {
		t.Fatalf("helm-controller installed release version %d, want 1", v)
	}
	const image = "ghcr.io/example/shop-web:1.4.2"
	if img := e.image("shop"); img != image {
		t.Fatalf("helm-controller installed image %q, want the HelmRelease's %q", img, image)
	}
	target := e.target("web")

	// Fidelity: nothing helm-controller wrote (its labels, Helm's
	// annotations, the defaulted fields) comes back as drift, and the
	// values digest it recorded is Git's.
	base, _ := e.srv.Branch("acme", "fleet", "main")
	out := e.poll(target)
	if out.Waiting != "" || out.PR != 0 || out.Plan == nil || !out.Plan.InSync() {
		t.Fatalf("the release as helm-controller installed it: want in sync, have waiting %q, PR %d, plan %+v", out.Waiting, out.PR, out.Plan)
	}
	if c := e.check("web", base); c.Conclusion != "success" {
		t.Fatalf("check %s %q:\n%s", c.Conclusion, c.Title, c.Summary)
	}
	// Helm's release record and the HelmRelease itself, in the release's
	// namespace, are the root's own, not objects nothing renders.
	if len(out.Plan.Untracked) != 0 {
		t.Errorf("untracked %v", out.Plan.Untracked)
	}

	// The 3 a.m. hotfix, as kubectl sends it.
	e.kubectlSetImage("shop", "ghcr.io/example/shop-web:1.4.3")
	e.scale("shop", "kubectl", 4) // kubectl scale: manager kubectl, through /scale (DESIGN §5)
	out = e.poll(target)
	if out.PR == 0 || out.Plan == nil || len(out.Plan.Edits) != 2 || len(out.Plan.Refusals) != 0 {
		t.Fatalf("want one pull request with two edits, have PR %d, plan %+v", out.PR, out.Plan)
	}
	prs := e.prs("web")
	if len(prs) != 1 {
		t.Fatalf("pull requests %+v, want one", prs)
	}
	const root = "clusters/prod/web/helmrelease.yaml"
	before, after := e.srv.Files("acme", "fleet", base), e.srv.Files("acme", "fleet", prs[0].HeadSHA)
	var changed []string
	for p := range after {
		if string(after[p]) != string(before[p]) {
			changed = append(changed, p)
		}
	}
	if !slices.Equal(changed, []string{root}) || len(after) != len(before) {
		t.Fatalf("the pull request changes %v (%d files, was %d), want %s alone", changed, len(after), len(before), root)
	}
	if got := changedLines(string(before[root]), string(after[root])); !slices.Equal(got, []string{
		"-    replicaCount: 2 # two for the daytime traffic", "+    replicaCount: 4 # two for the daytime traffic",
		"-      tag: \"1.4.2\" # bumped by the release pipeline", "+      tag: \"1.4.3\" # bumped by the release pipeline",
	}) {
		t.Fatalf("the pull request's lines:\n%s", strings.Join(got, "\n"))
	}

	// Merged: source-controller fetches it, kustomize-controller applies
	// the HelmRelease, helm-controller upgrades the release.
	merged, err := e.srv.MergePR("acme", "fleet", prs[0].Number, "merge")
	if err != nil {
		t.Fatal(err)
	}
	e.fetch(merged)
	e.flux.RequestReconcile(t, "web")
	if v := e.flux.WaitHelmRelease(t, "shop", "web", e.rev); v != 2 {
		t.Fatalf("helm-controller upgraded to release version %d, want 2", v)
	}
	if img := e.image("shop"); img != "ghcr.io/example/shop-web:1.4.3" {
		t.Fatalf("after the upgrade the image is %q", img)
	}
	out = e.poll(target)
	if out.Waiting != "" || out.PR != 0 || out.Plan == nil || !out.Plan.InSync() {
		t.Fatalf("after the upgrade: want in sync, have waiting %q, PR %d, plan %+v", out.Waiting, out.PR, out.Plan)
	}
	if c := e.check("web", merged); c.Conclusion != "success" {
		t.Errorf("check on the merge commit: %s %q\n%s", c.Conclusion, c.Title, c.Summary)
	}
	for _, p := range e.prs("web") {
		if p.State == "open" {
			t.Errorf("pull request #%d is still open", p.Number)
		}
	}
	if again := e.poll(target); !again.Idle {
		t.Errorf("then nothing moved: want idle, have %+v", again)
	}
}

// changedLines is the lines of a and b that differ, each "-a" then "+b",
// for texts of as many lines (a values edit changes lines in place).
func changedLines(a, b string) []string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(al) != len(bl) {
		return []string{"line count changed", a, b}
	}
	var out []string
	for i := range al {
		if al[i] != bl[i] {
			out = append(out, "-"+al[i], "+"+bl[i])
		}
	}
	return out
}
