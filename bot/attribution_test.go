package bot

import (
	"strings"
	"testing"
)

// The pull request's rows and the check run say who changed each drifted
// field, from the managedFields the poll read (issue 43, item 1): here
// the web image, set by kubectl set image at 03:12.
func TestEditsSayWhoChangedThem(t *testing.T) {
	const at = "    name: web\n    namespace: shop\n"
	live := writeThroughOnly(t)
	if !strings.Contains(live, at) {
		t.Fatal("the example's live web Deployment moved; update this test")
	}
	live = strings.Replace(live, at, at+`    managedFields:
    - apiVersion: apps/v1
      fieldsType: FieldsV1
      fieldsV1:
        f:spec:
          f:template:
            f:spec:
              f:containers:
                k:{"name":"web"}:
                  f:image: {}
      manager: kubectl-set
      operation: Update
      time: "2026-12-06T03:12:00Z"
`, 1)
	h := newHarness(t, live)
	out := h.poll()
	image := false
	for _, e := range out.Plan.Edits {
		image = image || (e.Object.Name == "web" && strings.HasSuffix(e.Field, ".image"))
	}
	if !image {
		t.Fatalf("the example's plan has no web image edit: %+v", out.Plan.Edits)
	}
	const who = "changed by kubectl-set (Update) at 2026-12-06T03:12:00Z"
	if body := h.openPR().Body; !strings.Contains(body, who) {
		t.Errorf("the pull request's rows do not say who changed the image:\n%s", body)
	}
	main, _ := h.srv.Branch(owner, repo, "main")
	if run := h.check(main); !strings.Contains(run.Summary, who) {
		t.Errorf("the check run does not say who changed the image:\n%s", run.Summary)
	}
	// Without managedFields nothing is said (the demo's objects).
	h2 := newHarness(t, writeThroughOnly(t))
	h2.poll()
	if strings.Contains(h2.openPR().Body, "changed by") {
		t.Error("a row names a writer though the objects came without managedFields")
	}
}
