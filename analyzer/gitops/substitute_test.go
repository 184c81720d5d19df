package gitops

import (
	"reflect"
	"testing"

	"github.com/driftback/driftback/analyzer/dye"
	"github.com/driftback/driftback/internal/kube"
)

func TestSolve(t *testing.T) {
	nonces, byNonce := VarNonces([]string{"env", "region"})
	tmpl := "app-" + nonces["env"] + "." + nonces["region"] + ".example.com"
	got, ok := Solve(tmpl, "app-prod.eu.example.com", byNonce)
	if want := map[string]string{"env": "prod", "region": "eu"}; !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("Solve = %v, %v; want %v", got, ok, want)
	}
	// Two ways to split the text: no answer.
	if got, ok := Solve(nonces["env"]+"-"+nonces["region"], "a-b-c", byNonce); ok {
		t.Errorf("an ambiguous split was solved: %v", got)
	}
	// One variable twice must take one value.
	if got, ok := Solve(nonces["env"]+"/"+nonces["env"], "a/b", byNonce); ok {
		t.Errorf("a variable took two values: %v", got)
	}
	if l := VarList(tmpl, byNonce); l != "${env}, ${region}" {
		t.Errorf("VarList = %q", l)
	}
}

func TestSecretMarkers(t *testing.T) {
	m := secretMarker("token")
	if !IsSecret(m) || IsSecret("x"+m) || !HoldsSecret("x"+m) {
		t.Error("a marker is not told apart")
	}
	if n := SecretNames("a" + m + "b" + secretMarker("key")); !reflect.DeepEqual(n, []string{"token", "key"}) {
		t.Errorf("SecretNames = %v", n)
	}
	if !FitsSecrets("Bearer "+m, "Bearer abc") || FitsSecrets("Bearer "+m, "Basic abc") {
		t.Error("FitsSecrets")
	}
}

func TestArgoImageRoundTrips(t *testing.T) {
	for _, s := range []string{"app", "app:v1", "app=reg/other:v2", "app=reg/other@sha256:abc", "reg:5000/app:1@sha256:d"} {
		if got := argoImageString(argoImage(s)); got != s {
			t.Errorf("%q reads back as %q", s, got)
		}
	}
}

// The repo server's expansion: a listed name takes its value, an unlisted
// one is empty, $$ is one $, an unknown value is a marker; ArgoReferences
// names what a setting refers to; an override keeps its variables when
// only its other part is set.
func TestArgoExpand(t *testing.T) {
	g := &Argo{Ctx: &kube.ArgoContext{Name: "web", Build: kube.ArgoBuild{DestinationNamespace: "shop", Revision: "0123456789abcdef"}}}
	for in, want := range map[string]string{
		"app:${ARGOCD_APP_REVISION_SHORT}":        "app:0123456",
		"$ARGOCD_APP_NAMESPACE-${KUBE_VERSION}-x": "shop--x",
		"cost $$5":           "cost $5",
		"${ARGOCD_APP_NAME}": unknownMarker("ARGOCD_APP_NAME"),
		"plain":              "plain",
	} {
		if got := g.expand(in); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
	if r := ArgoReferences("a${X}$Y$$${X}"); !reflect.DeepEqual(r, []string{"${X}", "${Y}", "$$"}) {
		t.Errorf("ArgoReferences = %v", r)
	}
	for _, c := range []struct {
		cur, field string
		keeps      bool
	}{
		{"app=reg/app:${ARGOCD_APP_REVISION_SHORT}", dye.FieldNewName, true},
		{"app=reg/app:${ARGOCD_APP_REVISION_SHORT}", dye.FieldNewTag, false},
		{"app=${REG}/app:v1", dye.FieldNewTag, true},
		{"app=${REG}/app:v1", dye.FieldNewName, false},
		{"app:v1", dye.FieldNewTag, true},
	} {
		if got := ArgoOverrideKeeps(c.cur, c.field); got != c.keeps {
			t.Errorf("ArgoOverrideKeeps(%q, %s) = %v", c.cur, c.field, got)
		}
	}
}
