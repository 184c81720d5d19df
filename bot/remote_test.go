package bot

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer"
)

// The shop's prod overlay builds on a base in acme/platform at ref v1,
// which the bot fetches as a tarball like any commit.
const (
	remoteDeploy = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: ghcr.io/example/web:1.4.0
        ports:
        - containerPort: 8080
`
	remoteOverlay = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: shop
resources:
- https://github.com/acme/platform//web?ref=v1
- settings.yaml
`
	remoteSettings = `apiVersion: v1
kind: ConfigMap
metadata:
  name: web-settings
data:
  mode: "fast"
`
	// Live: the overlay's ConfigMap and the base's port both drifted.
	remoteLive = `apiVersion: v1
kind: List
items:
- apiVersion: apps/v1
  kind: Deployment
  metadata: {name: web, namespace: shop}
  spec:
    replicas: 2
    selector: {matchLabels: {app: web}}
    template:
      metadata: {labels: {app: web}}
      spec:
        containers:
        - name: web
          image: ghcr.io/example/web:1.4.0
          ports:
          - containerPort: 9090
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: web-settings, namespace: shop}
  data: {mode: safe}
`
)

func remoteHarness(t *testing.T, ref string) *harness {
	h := newHarness(t, remoteLive)
	h.srv.CreateRepo(owner, "platform", "main", map[string][]byte{"README.md": []byte("platform\n")})
	h.srv.Commit(owner, "platform", ref, "release", map[string][]byte{
		"web/kustomization.yaml": []byte("resources: [deployment.yaml]\n"),
		"web/deployment.yaml":    []byte(remoteDeploy),
	})
	h.base = h.srv.Commit(owner, repo, "main", "dev", map[string][]byte{
		"overlays/prod/kustomization.yaml": []byte(remoteOverlay),
		"overlays/prod/settings.yaml":      []byte(remoteSettings),
	})
	return h
}

func TestRemoteBaseFetchedAndNeverWritten(t *testing.T) {
	h := remoteHarness(t, "v1")
	out := h.poll()
	if !out.Pushed || out.PR == 0 {
		t.Fatalf("outcome %+v", out)
	}
	if b, _ := h.srv.File(owner, repo, branch, "overlays/prod/settings.yaml"); !strings.Contains(string(b), `mode: "safe"`) {
		t.Errorf("branch settings.yaml:\n%s", b)
	}
	// The base's port is overridden in a new patch of the overlay, which
	// its kustomization lists; the remote base is never written.
	if b, _ := h.srv.File(owner, repo, branch, "overlays/prod/deployment-web.yaml"); !strings.Contains(string(b), "containerPort: 9090") {
		t.Errorf("branch deployment-web.yaml:\n%s", b)
	}
	if b, ok := h.srv.File(owner, repo, branch, "overlays/prod/kustomization.yaml"); !ok || string(b) != remoteOverlay+"patches:\n- path: deployment-web.yaml\n" {
		t.Errorf("the overlay kustomization:\n%s", b)
	}
	for _, p := range []string{"web/deployment.yaml", analyzer.RemoteFolder + "/github/acme/platform/v1/web/deployment.yaml"} {
		if _, ok := h.srv.File(owner, repo, branch, p); ok {
			t.Errorf("the branch holds %s", p)
		}
	}
	if b, _ := h.srv.File(owner, "platform", "v1", "web/deployment.yaml"); string(b) != remoteDeploy {
		t.Errorf("the remote base changed:\n%s", b)
	}
	pr := h.openPR()
	if strings.Contains(pr.Body, "out-of-scope") || !strings.Contains(pr.Body, "overlays/prod/deployment-web.yaml") || !strings.Contains(pr.Body, "(overlay)") {
		t.Errorf("PR body does not show the base's port overridden in the overlay:\n%s", pr.Body)
	}
}

// A remote base that cannot be fetched fails the poll: no PR, and no
// check run that could read as the drift being gone.
func TestRemoteBaseFetchFailureFailsThePoll(t *testing.T) {
	h := remoteHarness(t, "v2") // the overlay asks for v1, which does not exist
	_, err := h.bot.Reconcile(h.ctx, h.target)
	if err == nil || !strings.Contains(err.Error(), "remote base github.com/acme/platform?ref=v1") {
		t.Fatalf("reconcile: %v", err)
	}
	if len(h.prs()) != 0 {
		t.Errorf("pull requests: %+v", h.prs())
	}
	for _, run := range h.srv.CheckRuns(owner, repo, h.base) {
		if run.Conclusion == "success" {
			t.Errorf("check run %+v", run)
		}
	}
}

// A remote base at a branch follows the branch (issue 30, item 3): when it
// moves, the next poll reads the new commit, though nothing else changed,
// and no proposal is made against the old content.
func TestRemoteBaseAtABranchFollowsIt(t *testing.T) {
	h := remoteHarness(t, "v1")
	if out := h.poll(); out.PR == 0 {
		t.Fatalf("outcome %+v", out)
	}
	if again := h.poll(); !again.Idle {
		t.Fatalf("nothing moved: want idle, have %+v", again)
	}
	// The platform team moves v1 to a commit whose port is what runs.
	h.srv.Commit(owner, "platform", "v1", "release", map[string][]byte{
		"web/deployment.yaml": []byte(strings.Replace(remoteDeploy, "containerPort: 8080", "containerPort: 9090", 1)),
	})
	out := h.poll()
	if out.Idle || out.Plan == nil {
		t.Fatalf("the branch moved: want a plan, have %+v", out)
	}
	for _, e := range out.Plan.Edits {
		if strings.Contains(e.Field, "containerPort") {
			t.Errorf("the port that the moved base now has is still proposed: %+v", e)
		}
	}
	if _, ok := h.srv.File(owner, repo, branch, "overlays/prod/deployment-web.yaml"); ok {
		t.Error("the branch still overrides the port the base now sets")
	}
}
