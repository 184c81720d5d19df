package commands

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/argotest"
	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/kubetest"
	"github.com/driftback/driftback/internal/repofs"
)

// Render fidelity with Argo CD's real application-controller applying
// (issue 53, item 7, the Argo CD half of TestFluxRenderFidelity): the
// repo-server clones the test GitHub server's repository and renders it,
// the controller applies it by hand-started syncs (so nothing it applied
// is put back behind the test), and driftback plans each target as a poll
// of the bot does, with the Application read for the applied revision.

// argoFidApps are the Applications, each of a root apps/<name> in the
// namespace of that name: the webhook's under client-side and server-side
// sync, and a person's writes under each.
var argoFidApps = []struct {
	name       string
	serverSide bool
	mirrored   bool
}{
	{"argo-csa", false, true},
	{"argo-ssa", true, true},
	{"argo-person", false, false},
	{"argo-person-ssa", true, false},
}

// TestArgoRenderFidelity: one apiserver, Argo CD v3.3.0's controller and
// repo-server, an Application per case, each synced by hand. Measured:
//   - client-side sync (the default): Argo CD writes as argocd-controller
//     with an Update, never as kubectl-client-side-apply, and leaves a
//     last-applied configuration holding Git's image. A webhook rewriting
//     the image inside that sync: one entry, argocd-controller/Update,
//     owning the rewritten image; the label the webhook added owned by
//     nobody; the same after the next sync. driftback: no edit, fidelity
//     differs in the image, writer argocd-controller (Update), cause
//     server.
//   - server-side sync (the operation's ServerSideApply=true): one entry,
//     argocd-controller/Apply, owning the rewritten image, no last-applied
//     configuration; fidelity differs, writer argocd-controller (Apply),
//     no cause.
//   - after either sync, kubectl edit, scale and set image: entries
//     kubectl-edit/Update, kubectl/Update/scale and kubectl-set/Update
//     beside Argo CD's, each owning its field; all three proposed. Argo
//     CD's next sync leaves its own entry alone, owning all three at Git's
//     values: in sync.
func TestArgoRenderFidelity(t *testing.T) {
	assets := argotest.Assets(t)
	kubectl := kubetest.Kubectl(t)
	env, err := kubetest.Start(kubetest.Assets(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	argo := argotest.Start(t, env, assets, argotest.Options{})
	srv := githubtest.New(githubtest.Options{T: t})
	t.Cleanup(srv.Close)
	ctx := context.Background()

	var cfg strings.Builder
	cfg.WriteString("github: {appID: 1, privateKeyEnv: UNUSED, owner: acme}\nclusters: [{name: prod, inCluster: true}]\ntargets:\n")
	files := map[string][]byte{}
	var mirrored []string
	for _, app := range argoFidApps {
		fmt.Fprintf(&cfg, "- {name: %s, repo: acme/fleet, baseBranch: main, root: apps/%s, cluster: prod, namespaces: [%s], appliedRevision: {argocd: {namespace: argocd, name: %s}}}\n", app.name, app.name, app.name, app.name)
		files["apps/"+app.name+"/kustomization.yaml"] = []byte("resources:\n- deployment.yaml\n")
		files["apps/"+app.name+"/deployment.yaml"] = []byte(fidDeployment(app.name, "2", fidLimit))
		if app.mirrored {
			mirrored = append(mirrored, app.name)
		}
		ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": app.name}}}
		if _, err := argo.Dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	r := &fidRig{dyn: argo.Dyn, files: files, repo: repofs.New(), sha: srv.CreateRepo("acme", "fleet", "main", files)}
	for p, b := range files {
		if err := r.repo.Add(p, b); err != nil {
			t.Fatal(err)
		}
	}
	r.snap = analyzer.NewSnapshot(r.repo, nil)
	if r.cfg, err = config.Parse("driftback.yaml", []byte(cfg.String())); err != nil {
		t.Fatal(err)
	}
	if r.l, err = cluster.NewClientLister(env.Config); err != nil {
		t.Fatal(err)
	}

	// The webhook is there before Argo CD's first sync.
	calls := kubetest.MutatingWebhook(t, argo.Dyn, kubetest.Webhook{
		Name: "argo-mirror", Resource: deploymentsGVR, Namespaces: mirrored,
		Patch: kubetest.MirrorImage(fidAcme, fidMirror), Probe: fidProbe(mirrored[0]),
	})
	probed := calls.Load()

	// Every Application syncs by hand: with no automated policy Argo CD
	// never re-applies behind the test, whatever it compares. A server-side
	// one is synced as `argocd app sync --server-side` does.
	sync := func(t *testing.T, name string) {
		t.Helper()
		if strings.HasSuffix(name, "-ssa") {
			argo.SyncWith(t, name, "", "ServerSideApply=true")
		} else {
			argo.Sync(t, name, "")
		}
	}
	for _, app := range argoFidApps {
		a := argotest.App{Name: app.name, Namespace: app.name,
			Source: map[string]any{"repoURL": srv.URL() + "/acme/fleet.git", "path": "apps/" + app.name, "targetRevision": "main"}}
		if app.serverSide {
			a.SyncPolicy = map[string]any{"syncOptions": []any{"ServerSideApply=true"}}
		}
		argo.CreateApplication(t, a)
		argo.WaitCompared(t, app.name, r.sha, "OutOfSync")
		sync(t, app.name)
	}

	t.Run("webhook in Argo CD's sync", func(t *testing.T) {
		if calls.Load() == probed {
			t.Fatal("Argo CD's sync never reached the webhook")
		}
		// Measured: one managedFields entry, argocd-controller's (an
		// Update under client-side sync, an Apply under server-side), owns
		// the image the webhook rewrote; nobody owns the label it added.
		for _, c := range []struct{ when, name, entry, cause string }{
			// Client-side: the last-applied configuration holds Git's
			// image, the live object the webhook's.
			{"create", "argo-csa", "argocd-controller/Update", "server"},
			{"create", "argo-ssa", "argocd-controller/Apply", ""},
			// The next sync applies again and meets the webhook again.
			{"next sync", "argo-csa", "argocd-controller/Update", "server"},
			{"next sync", "argo-ssa", "argocd-controller/Apply", ""},
		} {
			t.Run(c.when+"/"+c.name, func(t *testing.T) {
				if c.when == "next sync" {
					before := calls.Load()
					sync(t, c.name)
					t.Logf("Argo CD's next sync called the webhook %d time(s)", calls.Load()-before)
				}
				d := r.get(t, deploymentsGVR, c.name, "web")
				cs, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
				if img := cs[0].(map[string]any)["image"]; img != fidMirror || d.GetLabels()["mirrored"] != "true" {
					t.Fatalf("the webhook's patch is not in the live object: image %v, labels %v", img, d.GetLabels())
				}
				status, _ := argotest.SyncStatus(argo.Application(t, c.name))
				t.Logf("Application %s; managedFields %v; image owned by %q, label mirrored by %q; last-applied %t",
					status, kubetest.Entries(d), owners(t, d, fidImageKeys...), owners(t, d, fidMirroredKeys...),
					d.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"] != "")
				if got := strings.Join(kubetest.Entries(d), ","); got != c.entry {
					t.Errorf("managedFields entries %s, want %s alone", got, c.entry)
				}
				if got := owners(t, d, fidImageKeys...); got != c.entry {
					t.Errorf("the image is owned by %q, want %s", got, c.entry)
				}
				if got := owners(t, d, fidMirroredKeys...); got != "" {
					t.Errorf("the webhook's label is owned by %q, want nobody", got)
				}
				manager, op, _ := strings.Cut(c.entry, "/")
				r.mirrorFinding(t, "after Argo CD's "+c.when, c.name, manager+" ("+op+")", c.cause)
			})
		}
	})

	// A person's kubectl edit, scale and set image after the sync: Argo
	// CD, syncing by hand, leaves them, and driftback proposes all three.
	t.Run("a person's writes after the sync", func(t *testing.T) {
		const byHand = "ghcr.io/acme/web:1.5.0"
		for _, name := range []string{"argo-person", "argo-person-ssa"} {
			runKubectl(t, kubectl, env.Kubeconfig, name, "s/memory: 256Mi/memory: 512Mi/", "", "edit", "deployment/web")
			runKubectl(t, kubectl, env.Kubeconfig, name, "", "", "scale", "deployment/web", "--replicas=3")
			runKubectl(t, kubectl, env.Kubeconfig, name, "", "", "set", "image", "deployment/web", "web="+byHand)
			d := r.get(t, deploymentsGVR, name, "web")
			t.Logf("%s after kubectl edit, scale and set image: managedFields %v; memory owned by %q, replicas by %q, image by %q",
				name, kubetest.Entries(d), owners(t, d, fidMemoryKeys...), owners(t, d, fidReplicasKeys...), owners(t, d, fidImageKeys...))
			argoEntry := "argocd-controller/Update"
			if strings.HasSuffix(name, "-ssa") {
				argoEntry = "argocd-controller/Apply"
			}
			if got := strings.Join(kubetest.Entries(d), ","); got != argoEntry+",kubectl-edit/Update,kubectl-set/Update,kubectl/Update/scale" {
				t.Errorf("%s: managedFields entries %s, want Argo CD's, kubectl-edit's, kubectl-set's and kubectl's through /scale", name, got)
			}
			res, objs := r.plan(t, name)
			want := map[string]string{fidMemory: "512Mi", "spec.replicas": "3", fidImageField: byHand}
			if got := edits(res.Plan); fmt.Sprint(got) != fmt.Sprint(want) || len(res.Plan.Refusals) != 0 || len(res.Plan.Files) == 0 || len(res.Restoring) != 0 {
				t.Errorf("%s: edits %v, want %v proposed and none left to Argo CD:\n%s", name, got, want, dumpResult(res, objs))
			}
			if v := res.Plan.Fidelity.Verdict; v != analyzer.FidelityMatch {
				t.Errorf("%s: a person's writes read as Argo CD's: fidelity %s\n%s", name, v, dumpResult(res, objs))
			}

			// Argo CD's next sync puts Git's values back: in sync.
			sync(t, name)
			d = r.get(t, deploymentsGVR, name, "web")
			t.Logf("%s after Argo CD's next sync: managedFields %v; memory owned by %q, replicas by %q, image by %q",
				name, kubetest.Entries(d), owners(t, d, fidMemoryKeys...), owners(t, d, fidReplicasKeys...), owners(t, d, fidImageKeys...))
			if got := strings.Join(kubetest.Entries(d), ","); got != argoEntry || owners(t, d, fidImageKeys...) != argoEntry {
				t.Errorf("%s: after Argo CD's next sync the entries are %s, want %s alone, owning the image", name, got, argoEntry)
			}
			res, objs = r.plan(t, name)
			if p := res.Plan; !p.InSync() || len(p.Files) != 0 || len(res.Restoring) != 0 || p.Fidelity.Verdict != analyzer.FidelityMatch {
				t.Errorf("%s: Git's values back are not in sync:\n%s", name, dumpResult(res, objs))
			}
		}
	})
}
