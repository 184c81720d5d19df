package helm

import (
	"strings"
	"testing"
)

// What a template reads and calls includes what it includes, across
// charts: the Deployment's image comes from the library chart's
// lib.image, which reads .Values.image.*; tpl's argument is recorded; a
// subchart's template is parsed under its own name.
func TestScanReach(t *testing.T) {
	ch, err := testChart(t).load()
	if err != nil {
		t.Fatal(err)
	}
	scan := scanChart(ch)
	f := scan.reach("app/templates/deployment.yaml")
	var reads []string
	for _, v := range f.values {
		reads = append(reads, v.String())
	}
	for _, want := range []string{"image.repository", "image.tag", "replicaCount", "podAnnotations", "global.region"} {
		if !strings.Contains(" "+strings.Join(reads, " ")+" ", " "+want+" ") {
			t.Errorf("the Deployment's templates read %v, not %s", reads, want)
		}
	}
	if !f.includes["lib.image"] || !f.includes["lib.labels"] {
		t.Errorf("includes %v", f.includes)
	}
	if len(f.tplArgs) != 1 || f.tplArgs[0].String() != "greeting" {
		t.Errorf("tpl arguments %v, want greeting", f.tplArgs)
	}
	if fns := f.nondeterministicFuncs(); len(fns) != 0 {
		t.Errorf("the Deployment calls %v", fns)
	}
	if fns := scan.reach("app/templates/secret.yaml").nondeterministicFuncs(); strings.Join(fns, " ") != "randAlphaNum" {
		t.Errorf("the Secret calls %v, want randAlphaNum", fns)
	}
	if sub := scan.reach("app/charts/sub/templates/statefulset.yaml"); len(sub.values) == 0 {
		t.Error("the subchart's template reads nothing")
	}
	var prefixes []string
	for _, p := range scan.prefixes {
		prefixes = append(prefixes, p.String())
	}
	if strings.Join(prefixes, ",") != ",lib,sub" && strings.Join(prefixes, ",") != ",sub,lib" {
		t.Errorf("value prefixes %q", prefixes)
	}
}
