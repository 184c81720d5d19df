package targetplan

import "testing"

func TestWorkflowFilesAreNeverWritten(t *testing.T) {
	for _, p := range []string{".github/workflows/ci.yml", ".github/workflows", "./.github/workflows/x/y.yaml"} {
		if WritablePath(p) == nil {
			t.Errorf("%s is writable", p)
		}
	}
	for _, p := range []string{".github/CODEOWNERS", "overlays/prod/kustomization.yaml"} {
		if err := WritablePath(p); err != nil {
			t.Errorf("%s refused: %v", p, err)
		}
	}
	if WritablePath("../x") == nil {
		t.Error("an escaping path is writable")
	}
}
