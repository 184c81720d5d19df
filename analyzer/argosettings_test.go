package analyzer

import (
	"fmt"
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/repofs"
)

// argoWith is the argo fixture with the Application manifest's kustomize
// settings given more lines (indented under spec.source.kustomize) and
// with old replaced by new in it, and the root and context the edited
// manifest gives.
func argoWith(t *testing.T, lines string, replace ...string) (*repofs.Repo, string, *kube.ArgoContext) {
	t.Helper()
	repo, _, _ := argoTarget(t)
	data, _ := repo.File("argocd/web.yaml")
	s := strings.Replace(string(data), "    kustomize:\n", "    kustomize:\n"+lines, 1)
	for i := 0; i+1 < len(replace); i += 2 {
		if !strings.Contains(s, replace[i]) {
			t.Fatalf("the Application manifest has no %q", replace[i])
		}
		s = strings.Replace(s, replace[i], replace[i+1], 1)
	}
	edited, err := repo.With(map[string][]byte{"argocd/web.yaml": []byte(s)})
	if err != nil {
		t.Fatal(err)
	}
	root, ctx := argoTargetIn(t, edited)
	return edited, root, ctx
}

var (
	selectorTier = jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("selector"), jsonvalue.Key("matchLabels"), jsonvalue.Key("tier")}
	templateTier = jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("template"), jsonvalue.Key("metadata"), jsonvalue.Key("labels"), jsonvalue.Key("tier")}
	ownTier      = jsonvalue.Path{jsonvalue.Key("metadata"), jsonvalue.Key("labels"), jsonvalue.Key("tier")}
)

// TestArgoLabelsWithoutSelector: with labelWithoutSelector the repo server
// adds the Application's commonLabels with `kustomize edit add label
// --without-selector` (and --include-templates with
// labelIncludeTemplates): a labels: entry that leaves selectors alone, and
// templates too unless asked. The cluster as Argo CD leaves it (the label
// on the object, and on the pod template only when included) is in sync,
// and a change of the label everywhere it lands is written to
// commonLabels in the Application's manifest: no selector holds it.
func TestArgoLabelsWithoutSelector(t *testing.T) {
	for _, templates := range []bool{false, true} {
		lines := "      labelWithoutSelector: true\n"
		if templates {
			lines += "      labelIncludeTemplates: true\n"
		}
		repo, root, ctx := argoWith(t, lines)
		// The cluster as Argo CD renders it: the plain render without the
		// label where kustomize leaves it out.
		plainRepo, plainRoot, plainCtx := argoTarget(t)
		live := argoRendered(t, plainRepo, plainRoot, plainCtx)
		web := find(t, live, "Deployment", "eu-web")
		jsonvalue.Delete(web, selectorTier)
		if !templates {
			jsonvalue.Delete(web, templateTier)
		}
		for _, force := range []bool{false, true} {
			if p := planArgo(t, repo, root, ctx, live, force); len(p.Edits)+len(p.Refusals)+len(p.Files) != 0 {
				t.Fatalf("templates %v: Argo CD's render is not in sync (dye %v):\n%s", templates, force, dump(p))
			}
		}
		set(t, web, ownTier, "back")
		if templates {
			set(t, web, templateTier, "back")
		}
		p := planArgo(t, repo, root, ctx, live, false)
		if len(p.Refusals) != 0 || len(p.Files) != 1 {
			t.Fatalf("templates %v: want the label written to the Application:\n%s", templates, dump(p))
		}
		if app := fileOf(t, p, "argocd/web.yaml"); !strings.Contains(app, "        tier: back\n") {
			t.Errorf("templates %v: the Application manifest lacks the new label:\n%s", templates, app)
		}
	}
	// --include-templates without --without-selector fails kustomize edit,
	// and so the repo server's build.
	plainRepo, plainRoot, plainCtx := argoTarget(t)
	live := argoRendered(t, plainRepo, plainRoot, plainCtx)
	repo, root, ctx := argoWith(t, "      labelIncludeTemplates: true\n")
	p := planArgo(t, repo, root, ctx, live, false)
	if len(p.Refusals) != 1 || p.Refusals[0].Code != CodeRenderFailed || !strings.Contains(p.Refusals[0].Message, "labelWithoutSelector") {
		t.Fatalf("want the build refused, naming labelWithoutSelector:\n%s", dump(p))
	}
}

// argoEnvTarget is the argo fixture with settings that use Argo CD's build
// environment: both image overrides, a common label and, with
// commonAnnotationsEnvsubst, common annotations.
func argoEnvTarget(t *testing.T) (*repofs.Repo, string, *kube.ArgoContext) {
	t.Helper()
	return argoWith(t, "      commonAnnotationsEnvsubst: true\n",
		"    server: https://kubernetes.default.svc\n", "    server: https://kubernetes.default.svc\n    namespace: shop\n",
		"- example/web:1.1 #", "- example/web:${ARGOCD_APP_REVISION_SHORT} #",
		"- example/proxy=mirror.example.com/proxy:2.0", "- example/proxy=mirror.example.com/proxy:${ARGOCD_APP_REVISION_SHORT_8}",
		"        tier: front\n", "        tier: front\n        instance: ${ARGOCD_APP_NAME}-$ARGOCD_APP_NAMESPACE\n",
		"        owner: team-web\n", "        owner: team-web\n        source: ${ARGOCD_APP_SOURCE_REPO_URL}#${ARGOCD_APP_SOURCE_PATH}@${ARGOCD_APP_SOURCE_TARGET_REVISION}\n"+
			"        cluster: v${KUBE_VERSION}\n        price: $$5\n")
}

var (
	ownInstance = jsonvalue.Path{jsonvalue.Key("metadata"), jsonvalue.Key("labels"), jsonvalue.Key("instance")}
	ownSource   = jsonvalue.Path{jsonvalue.Key("metadata"), jsonvalue.Key("annotations"), jsonvalue.Key("source")}
	podSource   = jsonvalue.Path{jsonvalue.Key("spec"), jsonvalue.Key("template"), jsonvalue.Key("metadata"), jsonvalue.Key("annotations"), jsonvalue.Key("source")}
	webImage    = containers(jsonvalue.Index(0), jsonvalue.Key("image"))
	proxyImg    = containers(jsonvalue.Index(1), jsonvalue.Key("image"))
)

// TestArgoBuildEnvironment: the repo server expands its environment
// (${ARGOCD_APP_NAME}, $ARGOCD_APP_NAMESPACE, the revision's short forms,
// the source's URL, path and target revision) in image overrides, common
// labels and, with commonAnnotationsEnvsubst, common annotations; a name it
// does not set (KUBE_VERSION) becomes empty and $$ one $. The render holds
// what Argo CD applied, fed back it plans nothing; a drift in a value that
// comes from a variable is refused by name and never written over it; a
// change of the override's other part is written with the variable kept.
func TestArgoBuildEnvironment(t *testing.T) {
	repo, root, ctx := argoEnvTarget(t)
	live := argoRendered(t, repo, root, ctx)
	web := find(t, live, "Deployment", "eu-web")
	for p, want := range map[string]any{
		"spec.template.spec.containers[0].image": "example/web:0123456",
		"spec.template.spec.containers[1].image": "mirror.example.com/proxy:01234567",
		"metadata.labels.instance":               "web-shop",
		"spec.selector.matchLabels.instance":     "web-shop",
		"metadata.annotations.source":            "https://github.com/acme/fleet.git#apps/web@main",
		"metadata.annotations.cluster":           "v",
		"metadata.annotations.price":             "$5",
	} {
		if got, ok := jsonvalue.Get(web, dotted(t, p)); !ok || !jsonvalue.Equal(got, want) {
			t.Errorf("%s = %v, want %v", p, got, want)
		}
	}
	for _, force := range []bool{false, true} {
		if p := planArgo(t, repo, root, ctx, live, force); len(p.Edits)+len(p.Refusals)+len(p.Files) != 0 {
			t.Fatalf("the render fed back as live is not a no-op (dye %v):\n%s", force, dump(p))
		}
	}

	// A tag the variable supplies, and an annotation holding variables
	// changed everywhere it lands: refused, naming them, nothing written.
	set(t, web, webImage, "example/web:9999999")
	set(t, web, ownSource, "https://example.com/other")
	set(t, web, podSource, "https://example.com/other")
	p := planArgo(t, repo, root, ctx, live, false)
	if len(p.Files) != 0 || len(p.Refusals) != 3 {
		t.Fatalf("want three refusals and no file:\n%s", dump(p))
	}
	for _, r := range p.Refusals {
		want := "${ARGOCD_APP_REVISION_SHORT}"
		if strings.Contains(r.Field, "source") {
			want = "${ARGOCD_APP_SOURCE_REPO_URL}, ${ARGOCD_APP_SOURCE_PATH}, ${ARGOCD_APP_SOURCE_TARGET_REVISION}"
		}
		if r.Code != CodeOrchestratorContext || !strings.Contains(r.Message, want) || !strings.Contains(r.Message, "never writes a value over it") {
			t.Errorf("refusal %+v does not name %s", r, want)
		}
	}

	// A new registry for the proxy, its tag still the variable's: written
	// with the variable kept, and verified by rendering it again.
	live = argoRendered(t, repo, root, ctx)
	set(t, find(t, live, "Deployment", "eu-web"), proxyImg, "mirror2.example.com/proxy:01234567")
	p = planArgo(t, repo, root, ctx, live, false)
	if len(p.Refusals) != 0 || len(p.Edits) != 1 {
		t.Fatalf("want the rename written:\n%s", dump(p))
	}
	if app := fileOf(t, p, "argocd/web.yaml"); !strings.Contains(app, "- example/proxy=mirror2.example.com/proxy:${ARGOCD_APP_REVISION_SHORT_8}\n") {
		t.Errorf("the override lost its variable:\n%s", app)
	}
}

// TestArgoUnknownInstanceName: without argocd-cm beside the Application,
// its instance name (ARGOCD_APP_NAME) may be its name or namespace_name:
// a field built from it is compared around it, and a drift there is
// refused as orchestrator-context naming the variable, no value guessed.
func TestArgoUnknownInstanceName(t *testing.T) {
	repo, root, ctx := argoEnvTarget(t)
	live := argoRendered(t, repo, root, ctx) // as Argo CD built it: instance web-shop
	unknown := *ctx
	unknown.Build.Instance, unknown.Build.Settings = "", false
	if p := planArgo(t, repo, root, &unknown, live, false); len(p.Edits)+len(p.Refusals)+len(p.Files) != 0 {
		t.Fatalf("the cluster as Argo CD built it is not in sync:\n%s", dump(p))
	}
	for _, path := range []jsonvalue.Path{ownInstance, selectorTier[:len(selectorTier)-1].Child(jsonvalue.Key("instance")), templateTier[:len(templateTier)-1].Child(jsonvalue.Key("instance"))} {
		set(t, find(t, live, "Deployment", "eu-web"), path, "web-prod")
	}
	p := planArgo(t, repo, root, &unknown, live, false)
	if len(p.Files) != 0 || len(p.Refusals) == 0 {
		t.Fatalf("want refusals and no file:\n%s", dump(p))
	}
	for _, r := range p.Refusals {
		if r.Code != CodeOrchestratorContext || !strings.Contains(r.Message, "${ARGOCD_APP_NAME}") {
			t.Errorf("refusal %+v does not name ${ARGOCD_APP_NAME}", r)
		}
	}
}

// TestArgoBuildOptions: argocd-cm's kustomize.buildOptions as the repo
// server passes them to kustomize build. --enable-managedby-label labels
// every object app.kubernetes.io/managed-by: kustomize-<the binary's
// version>, which is compared around the version and refused by name when
// changed; --load-restrictor LoadRestrictionsNone lets the root read a
// patch outside its folder, as Argo CD builds it; --enable-helm, an option
// driftback does not apply, and a kustomize version of another release
// refuse the target, naming them.
func TestArgoBuildOptions(t *testing.T) {
	repo, root, ctx := argoTarget(t)
	plain := argoRendered(t, repo, root, ctx)
	labelled := *ctx
	labelled.Build.BuildOptions = "--enable-managedby-label"
	live := argoRendered(t, repo, root, &labelled)
	managedBy := jsonvalue.Path{jsonvalue.Key("metadata"), jsonvalue.Key("labels"), jsonvalue.Key("app.kubernetes.io/managed-by")}
	for _, o := range live {
		v, _ := jsonvalue.Get(o, managedBy)
		if s, _ := v.(string); !strings.HasPrefix(s, "kustomize-") {
			t.Fatalf("%s renders managed-by %v", stringAt(o, "metadata", "name"), v)
		}
		set(t, o, managedBy, "kustomize-v5.8.0") // as Argo CD's binary wrote it
	}
	if p := planArgo(t, repo, root, &labelled, live, false); len(p.Edits)+len(p.Refusals)+len(p.Files) != 0 || len(p.Fidelity.Fields) != 0 {
		t.Fatalf("the label Argo CD's build wrote is not in sync:\n%s", dump(p))
	}
	// The options alone, for an Application with no kustomize settings.
	bare := labelled
	bare.Kustomize = nil
	own := argoRendered(t, repo, root, &bare)
	if v, _ := jsonvalue.Get(find(t, own, "Deployment", "web"), managedBy); !strings.HasPrefix(fmt.Sprint(v), "kustomize-") {
		t.Fatalf("without kustomize settings the label is not rendered: %v", v)
	}
	for _, o := range own {
		set(t, o, managedBy, "kustomize-v5.8.0")
	}
	if p := planArgo(t, repo, root, &bare, own, false); len(p.Edits)+len(p.Refusals)+len(p.Files) != 0 {
		t.Fatalf("build options alone: not in sync:\n%s", dump(p))
	}
	set(t, find(t, live, "Deployment", "eu-web"), managedBy, "helm")
	p := planArgo(t, repo, root, &labelled, live, false)
	if len(p.Files) != 0 || len(p.Refusals) != 1 || p.Refusals[0].Code != CodeOrchestratorContext || !strings.Contains(p.Refusals[0].Message, "--enable-managedby-label") {
		t.Fatalf("want the changed label refused, naming the option:\n%s", dump(p))
	}

	// A patch outside the root's folder: kustomize's default refuses it,
	// and so does the build without the option.
	outside, err := repo.With(map[string][]byte{
		"apps/web/kustomization.yaml": []byte("resources:\n- deployment.yaml\nimages:\n- name: example/web\n  newTag: \"1.0\"\npatches:\n- path: ../shared/ready.yaml\n"),
		"apps/shared/ready.yaml":      []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  revisionHistoryLimit: 5\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if p := planArgo(t, outside, root, ctx, plain, false); len(p.Refusals) != 1 || p.Refusals[0].Code != CodeRenderFailed {
		t.Fatalf("without the option the build must fail:\n%s", dump(p))
	}
	unrestricted := *ctx
	unrestricted.Build.BuildOptions = "--load-restrictor LoadRestrictionsNone"
	live = argoRendered(t, outside, root, &unrestricted)
	if v, _ := jsonvalue.Get(find(t, live, "Deployment", "eu-web"), dotted(t, "spec.revisionHistoryLimit")); !jsonvalue.Equal(v, int64(5)) {
		t.Fatalf("the patch outside the root is not in the render: %v", v)
	}
	if p := planArgo(t, outside, root, &unrestricted, live, true); len(p.Edits)+len(p.Refusals)+len(p.Files) != 0 {
		t.Fatalf("the render fed back is not a no-op:\n%s", dump(p))
	}

	for opts, want := range map[string]string{
		"--enable-helm":                         "kustomize.buildOptions --enable-helm of argocd-cm",
		"--enable-managedby-label --reorder":    "kustomize.buildOptions --reorder of argocd-cm",
		"--load-restrictor=LoadRestrictionsFoo": "kustomize.buildOptions --load-restrictor=LoadRestrictionsFoo",
	} {
		c := *ctx
		c.Build.BuildOptions = opts
		if p := planArgo(t, repo, root, &c, plain, false); len(p.Refusals) != 1 || p.Refusals[0].Code != CodeOrchestratorContext || !strings.Contains(p.Refusals[0].Message, want) {
			t.Errorf("%s: want the target refused naming %q:\n%s", opts, want, dump(p))
		}
	}
	for version, refused := range map[string]bool{"v4.5.7": true, "v5.8.1": false} {
		c := *ctx
		c.Kustomize = jsonvalue.Copy(ctx.Kustomize).(map[string]any)
		c.Kustomize["version"] = version
		p := planArgo(t, repo, root, &c, plain, false)
		if got := len(p.Refusals) == 1 && p.Refusals[0].Code == CodeOrchestratorContext && strings.Contains(p.Refusals[0].Message, "kustomize.version "+version); got != refused ||
			!refused && len(p.Refusals)+len(p.Edits) != 0 {
			t.Errorf("version %s: refused %v, want %v:\n%s", version, got, refused, dump(p))
		}
	}
}
