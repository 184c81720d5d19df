package gitops

import (
	"reflect"
	"testing"
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
