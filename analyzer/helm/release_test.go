package helm

import (
	"os"
	"regexp"
	"testing"
)

// DefaultKubeVersion is the Kubernetes minor of the client-go in go.mod,
// as its doc says: a bump of client-go without it fails here.
func TestDefaultKubeVersionFollowsClientGo(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/client-go v0\.(\d+)\.\d+`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod requires no k8s.io/client-go")
	}
	if want := "v1." + string(m[1]) + ".0"; DefaultKubeVersion != want {
		t.Errorf("DefaultKubeVersion = %s; client-go v0.%s.x is Kubernetes %s", DefaultKubeVersion, m[1], want)
	}
}
