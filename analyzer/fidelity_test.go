package analyzer

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/kube"
)

// The rows of issue 53's table, each as the cluster holds it: who wrote a
// differing value decides whether it is a person's change, and the API
// server's own forms of the render's values are the render.

const fidelityWeb = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: ghcr.io/acme/web:1.4.2
`

// fidelityRepo is a one-file root holding docs.
func fidelityRepo(t *testing.T, docs string) map[string]string {
	t.Helper()
	return map[string]string{"kustomization.yaml": "resources: [app.yaml]\n", "app.yaml": docs}
}

// planFidelity plans the root against live, read as `plan --live` reads a
// snapshot taken with --show-managed-fields, under rules.
func planFidelity(t *testing.T, files map[string]string, live string, rules cluster.Rules) *Plan {
	t.Helper()
	objs, err := cluster.ParseLive("live.yaml", []byte(live), rules)
	if err != nil {
		t.Fatal(err)
	}
	return planLive(t, repoOf(t, files), "", objs)
}

// managed is a managedFields block for one Deployment container field.
func managedImage(manager, operation, subresource string) string {
	sub := ""
	if subresource != "" {
		sub = "\n    subresource: " + subresource
	}
	return `
  - manager: ` + manager + `
    operation: ` + operation + sub + `
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:template:
          f:spec:
            f:containers:
              k:{"name":"web"}:
                f:image: {}`
}

// liveWeb is the Deployment as the cluster holds it: image, extra
// metadata lines and managedFields entries as given.
func liveWeb(image, metadata, managed string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: shop` + metadata + `
  managedFields:
  - manager: kustomize-controller
    operation: Apply
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:replicas: {}
        f:selector: {}
        f:template:
          f:metadata: {}
          f:spec:
            f:containers:
              k:{"name":"web"}:
                .: {}
                f:name: {}` + managed + `
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: ` + image + `
`
}

const fluxMarks = `
  labels:
    kustomize.toolkit.fluxcd.io/name: apps
    kustomize.toolkit.fluxcd.io/namespace: flux-system`

// A mutating webhook rewrote the image inside Flux's apply: only
// kustomize-controller owns it, so it is the tool's value, never an edit,
// and the plan says its render differs there.
func TestWebhookRewriteInToolApplyIsNoEdit(t *testing.T) {
	mirror := "mirror.example.com/acme/web:1.4.2"
	for name, tc := range map[string]struct {
		marks, managed string
		rules          cluster.Rules
		cause          string
	}{
		"flux server-side":                  {fluxMarks, managedImage("kustomize-controller", "Apply", ""), cluster.DefaultRules(), ""},
		"flux, target's tool":               {"", managedImage("kustomize-controller", "Apply", ""), cluster.DefaultRules().WithTool(cluster.ToolFlux), ""},
		"flux, an applier the config names": {fluxMarks, managedImage("release-bot", "Apply", ""), cluster.NewRules([]string{"release-bot"}, nil), ""},
		"argo cd server-side": {"\n  annotations:\n    argocd.argoproj.io/tracking-id: shop:apps/Deployment:shop/web",
			managedImage("argocd-controller", "Apply", ""), cluster.DefaultRules(), ""},
		"argo cd client-side": {"\n  annotations:\n    argocd.argoproj.io/tracking-id: shop:apps/Deployment:shop/web\n    kubectl.kubernetes.io/last-applied-configuration: '" +
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{"argocd.argoproj.io/tracking-id":"shop:apps/Deployment:shop/web"},"name":"web","namespace":"shop"},"spec":{"replicas":2,"template":{"spec":{"containers":[{"name":"web","image":"ghcr.io/acme/web:1.4.2"}]}}}}` + "'",
			managedImage("kubectl-client-side-apply", "Update", ""), cluster.DefaultRules(), kube.CauseServer},
	} {
		t.Run(name, func(t *testing.T) {
			p := planFidelity(t, fidelityRepo(t, fidelityWeb), liveWeb(mirror, tc.marks, tc.managed), tc.rules)
			if len(p.Edits) != 0 || len(p.Refusals) != 0 {
				t.Fatalf("the tool's own value proposed:\n%s", dump(p))
			}
			f := p.Fidelity
			if f.Verdict != FidelityDiffers || len(f.Fields) != 1 || f.Fields[0].Field != "spec.template.spec.containers[web].image" ||
				f.Fields[0].Applied != mirror || f.Fields[0].Cause != tc.cause {
				t.Fatalf("fidelity %+v", f)
			}
		})
	}
}

// The same rewrite by a person's manager stays a person's change; and on
// an object Flux applies, a hand `kubectl apply --server-side` (manager
// kubectl) or a `kubectl scale` through the subresource is a person's too.
func TestPersonsWritesStayEdits(t *testing.T) {
	for name, managed := range map[string]string{
		"kubectl set image":        managedImage("kubectl-set", "Update", ""),
		"kubectl apply (server)":   managedImage("kubectl", "Apply", ""),
		"kubectl edit":             managedImage("kubectl-edit", "Update", ""),
		"flux's name, subresource": managedImage("kustomize-controller", "Update", "scale"),
	} {
		t.Run(name, func(t *testing.T) {
			p := planFidelity(t, fidelityRepo(t, fidelityWeb), liveWeb("ghcr.io/acme/web:1.4.3", fluxMarks, managed), cluster.DefaultRules())
			if len(p.Edits) != 1 || p.Edits[0].To != "ghcr.io/acme/web:1.4.3" || p.Fidelity.Verdict != FidelityMatch {
				t.Fatalf("a person's change not proposed:\n%s", dump(p))
			}
		})
	}
}

// On an object no GitOps tool is known to apply (no marks, no target's
// tool), a value kubectl's own managers wrote over the render's stays a
// change though the default appliers name them: a person's hand apply is
// as likely as a pipeline's.
func TestKubectlOverTheRenderWithoutATool(t *testing.T) {
	for name, managed := range map[string]string{
		"server-side": managedImage("kubectl", "Apply", ""),
		"client-side": managedImage("kubectl-client-side-apply", "Update", ""),
	} {
		t.Run(name, func(t *testing.T) {
			p := planFidelity(t, fidelityRepo(t, fidelityWeb), liveWeb("ghcr.io/acme/web:1.4.3", "", managed), cluster.DefaultRules())
			if len(p.Edits) != 1 || p.Edits[0].To != "ghcr.io/acme/web:1.4.3" {
				t.Fatalf("kubectl's value over the render not proposed:\n%s", dump(p))
			}
		})
	}
}

// A person's `kubectl apply --server-side` that adds an env var records
// manager kubectl: on an object Flux applies, that is a person.
func TestServerSideApplyByHandAddsEnv(t *testing.T) {
	live := strings.Replace(liveWeb("ghcr.io/acme/web:1.4.2", fluxMarks, `
  - manager: kubectl
    operation: Apply
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:template:
          f:spec:
            f:containers:
              k:{"name":"web"}:
                .: {}
                f:env:
                  k:{"name":"DEBUG"}:
                    .: {}
                    f:name: {}
                    f:value: {}
                f:name: {}`), "        image: ghcr.io/acme/web:1.4.2\n", "        image: ghcr.io/acme/web:1.4.2\n        env: [{name: DEBUG, value: \"1\"}]\n", 1)
	p := planFidelity(t, fidelityRepo(t, fidelityWeb), live, cluster.DefaultRules())
	if len(p.Edits) != 1 || !strings.Contains(p.Edits[0].Field, "env") {
		t.Fatalf("the env var a person applied is not proposed:\n%s", dump(p))
	}
}

// The tool's own last-applied configuration holds the live value where
// driftback renders another: driftback's render of that object is proven
// wrong, so the object's other change (a person's scale) is held back,
// named, rather than built on it.
func TestProvenRenderMismatchHoldsObject(t *testing.T) {
	la := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{"argocd.argoproj.io/tracking-id":"shop:apps/Deployment:shop/web"},"name":"web","namespace":"shop"},"spec":{"template":{"spec":{"containers":[{"name":"web","image":"ghcr.io/acme/web:1.5.0"}]}}}}`
	live := liveWeb("ghcr.io/acme/web:1.5.0", "\n  annotations:\n    argocd.argoproj.io/tracking-id: shop:apps/Deployment:shop/web\n    kubectl.kubernetes.io/last-applied-configuration: '"+la+"'",
		managedImage("kubectl-client-side-apply", "Update", "")+`
  - manager: kubectl
    operation: Update
    subresource: scale
    fieldsType: FieldsV1
    fieldsV1:
      f:spec:
        f:replicas: {}`)
	live = strings.Replace(live, "  replicas: 2\n", "  replicas: 5\n", 1)
	p := planFidelity(t, fidelityRepo(t, fidelityWeb), live, cluster.DefaultRules())
	if len(p.Edits) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeRenderMismatch || p.Fidelity.Fields[0].Cause != kube.CauseRender {
		t.Fatalf("an edit built on a render the tool's record disproves:\n%s", dump(p))
	}
}

// What the API server stores for the render's own values is the render:
// canonical quantities, empty lists and strings left out, a binding's
// apiGroup filled in, generated binaryData unwrapped, a cluster-scoped
// object's namespace dropped, an unnamespaced object placed in the
// default namespace beside a same-named one elsewhere. No managedFields
// are needed for any of it.
func TestAPIServerFormsAreTheRender(t *testing.T) {
	files := fidelityRepo(t, `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.0
        env: [{name: EMPTY, value: ""}]
        resources:
          limits: {cpu: 2000m, memory: 1.5Gi}
          requests: {cpu: "0.5", memory: 1024Mi}
        volumeMounts: []
      volumes: []
      tolerations: []
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: rb, namespace: default}
roleRef: {apiGroup: "", kind: ClusterRole, name: view}
subjects: [{apiGroup: "", kind: User, name: jane}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: crb, namespace: somewhere}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: jane}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: blob, namespace: default}
binaryData:
  blob.bin: |-
    AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4
    OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3Bx
`)
	live := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: web
        image: nginx:1.0
        env: [{name: EMPTY}]
        resources:
          limits: {cpu: "2", memory: 1536Mi}
          requests: {cpu: 500m, memory: 1Gi}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: other}
spec:
  template: {spec: {containers: [{name: web, image: other:9}]}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: rb, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: jane}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: crb}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: jane}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: blob, namespace: default}
binaryData:
  blob.bin: AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3Bx
`
	p := planFidelity(t, files, live, cluster.DefaultRules())
	if !p.InSync() || len(p.Files) != 0 {
		t.Fatalf("the API server's forms read as drift:\n%s", dump(p))
	}
	// A person's change of a quantity is still one.
	p = planFidelity(t, files, strings.Replace(live, "memory: 1536Mi", "memory: 2Gi", 1), cluster.DefaultRules())
	if len(p.Edits) != 1 || p.Edits[0].To != "2Gi" {
		t.Fatalf("a changed quantity not proposed:\n%s", dump(p))
	}
}

// A `kubectl scale` of a Deployment whose manifest has no replicas leaves
// no managedFields entry: a count other than the default is a person's,
// unless an autoscaler read beside it scales the Deployment.
func TestScaleWithoutReplicasInGit(t *testing.T) {
	files := fidelityRepo(t, strings.Replace(fidelityWeb, "  replicas: 2\n", "", 1))
	live := strings.Replace(liveWeb("ghcr.io/acme/web:1.4.2", fluxMarks, ""), "        f:replicas: {}\n", "", 1)
	live = strings.Replace(live, "  replicas: 2\n", "  replicas: 3\n", 1)
	p := planFidelity(t, files, live, cluster.DefaultRules())
	if len(p.Edits) != 1 || p.Edits[0].Field != "spec.replicas" {
		t.Fatalf("a person's scale not proposed:\n%s", dump(p))
	}
	// The default count is nobody's change.
	p = planFidelity(t, files, strings.Replace(live, "  replicas: 3\n", "  replicas: 1\n", 1), cluster.DefaultRules())
	if !p.InSync() {
		t.Fatalf("the default replica count proposed:\n%s", dump(p))
	}
	hpa := `---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 5
`
	p = planFidelity(t, files, live+hpa, cluster.DefaultRules())
	if len(p.Edits) != 0 {
		t.Fatalf("an autoscaler's count proposed:\n%s", dump(p))
	}
}

// Argo CD's client-side apply records its own render in last-applied:
// a label there that driftback's render lacks (argocd-cm's
// --enable-managedby-label) is the tool's, not a person's.
func TestArgoLastAppliedLabelIsTools(t *testing.T) {
	la := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{"argocd.argoproj.io/tracking-id":"shop:apps/Deployment:shop/web"},"labels":{"app.kubernetes.io/managed-by":"kustomize-v5.8.0"},"name":"web","namespace":"shop"}}`
	live := liveWeb("ghcr.io/acme/web:1.4.2", "\n  labels:\n    app.kubernetes.io/managed-by: kustomize-v5.8.0\n  annotations:\n    argocd.argoproj.io/tracking-id: shop:apps/Deployment:shop/web\n    kubectl.kubernetes.io/last-applied-configuration: '"+la+"'", `
  - manager: kubectl-client-side-apply
    operation: Update
    fieldsType: FieldsV1
    fieldsV1:
      f:metadata:
        f:labels:
          f:app.kubernetes.io/managed-by: {}`)
	p := planFidelity(t, fidelityRepo(t, fidelityWeb), live, cluster.DefaultRules())
	if !p.InSync() {
		t.Fatalf("Argo CD's own label proposed:\n%s", dump(p))
	}
}
