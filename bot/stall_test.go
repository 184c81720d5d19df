package bot

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftback/driftback/bot/prbody"
	"github.com/driftback/driftback/cluster"
)

// Issue 31, item 2: a poll that fails for a cause a person must fix keeps
// the pull request open and says why on the base head's check run; a blip
// (the network) writes nothing.

var kustomizations = schema.GroupResource{Group: "kustomize.toolkit.fluxcd.io", Resource: "kustomizations"}

// stallCauses each break a harness whose first poll opened a pull request,
// and name what the base head's check run must then say.
var stallCauses = map[string]struct {
	brk  func(h *harness)
	want string
}{
	"the applied revision is a commit GitHub does not have": {
		brk: func(h *harness) {
			h.target.Applied = func(context.Context) (cluster.Applied, error) {
				return cluster.Applied{Revision: strings.Repeat("d", 40), Raw: "main@sha1:" + strings.Repeat("d", 40)}, nil
			}
		},
		want: "commit GitHub does not have",
	},
	"the Flux Kustomization is gone": {
		brk: func(h *harness) {
			h.target.Applied = func(context.Context) (cluster.Applied, error) {
				return cluster.Applied{}, fmt.Errorf("flux Kustomization flux-system/shop: %w", apierrors.NewNotFound(kustomizations, "shop"))
			}
		},
		want: "is gone",
	},
	"the Kustomization CRD is gone": {
		brk: func(h *harness) {
			h.target.Applied = func(context.Context) (cluster.Applied, error) {
				// What the dynamic client answers for a resource the API
				// server no longer serves.
				return cluster.Applied{}, fmt.Errorf("flux Kustomization flux-system/shop: %w",
					apierrors.NewGenericServerResponse(404, "get", kustomizations, "shop", "", 0, false))
			}
		},
		want: "is gone",
	},
	"a kind cannot be read": {
		brk: func(h *harness) {
			h.target.Lister = listerFunc(func(context.Context, cluster.Scope) ([]cluster.Object, error) {
				return nil, fmt.Errorf("list apps/v1, Resource=deployments in shop: %w", apierrors.NewForbidden(
					schema.GroupResource{Group: "apps", Resource: "deployments"}, "", errors.New(`User "system:serviceaccount:driftback:driftback" cannot list resource "deployments"`)))
			})
		},
		want: "could not read the cluster",
	},
}

func TestStalledPollSaysWhyAndKeepsThePR(t *testing.T) {
	for name, c := range stallCauses {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, writeThroughOnly(t))
			h.poll()
			pr := h.openPR()
			head, _ := h.srv.Branch(owner, repo, branch)
			c.brk(h)
			if err := h.pollErr(); err == nil {
				t.Fatal("the poll passed")
			}
			run := h.check(h.base)
			if run.Conclusion != "failure" || !strings.Contains(run.Title, c.want) {
				t.Fatalf("base head check: %s %q, want a failure saying %q\n%s", run.Conclusion, run.Title, c.want, run.Summary)
			}
			if strings.Contains(run.Summary, "matches Git") || strings.Contains(run.Title, "matches") {
				t.Fatalf("a failure claims a verdict: %+v", run)
			}
			if got := h.openPR(); got.Number != pr.Number || len(got.Comments) != 0 || len(h.prs()) != 1 {
				t.Fatalf("the PR was touched: %+v", h.prs())
			}
			if now, ok := h.srv.Branch(owner, repo, branch); !ok || now != head {
				t.Fatal("the branch was deleted or moved")
			}
			// The same cause again and again: no second run.
			runs := len(h.srv.CheckRuns(owner, repo, h.base))
			for i := 0; i < 3; i++ {
				h.pollErr()
			}
			if n := len(h.srv.CheckRuns(owner, repo, h.base)); n != runs {
				t.Fatalf("3 more polls with the same cause posted %d check runs, want 0", n-runs)
			}
		})
	}
}

// The same cause poll after poll is one check run and one note in the PR
// body; a new cause is one more of each; when the cause ends, the verdict
// and the body are back, and the target is idle again.
func TestStalledPollsWriteOncePerCause(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	good := h.check(h.base)
	before := len(h.srv.CheckRuns(owner, repo, h.base))
	stallCauses["the Flux Kustomization is gone"].brk(h)
	h.pollErr()
	if n := len(h.srv.CheckRuns(owner, repo, h.base)); n != before+1 {
		t.Fatalf("first failing poll: %d check runs written, want 1", n-before)
	}
	if strings.Contains(h.openPR().Body, "cannot check this pull request") {
		t.Fatal("one failed poll is not a lasting failure; the body changed at once")
	}
	h.pollErr() // the same cause a second time: the body says it, once
	body := h.openPR().Body
	if strings.Count(body, "cannot check this pull request") != 1 || !strings.Contains(body, "is gone") {
		t.Fatalf("a lasting failure is not in the body:\n%s", body)
	}
	mark := h.srv.Counters()
	for i := 0; i < 5; i++ {
		if err := h.pollErr(); err == nil {
			t.Fatal("the poll passed")
		}
	}
	if d := h.srv.Counters().Sub(mark); d.Mutating != 0 {
		t.Fatalf("5 more polls with the same cause made %d writes, want 0", d.Mutating)
	}
	if n := len(h.srv.CheckRuns(owner, repo, h.base)); n != before+1 {
		t.Fatalf("%d check runs for one cause, want 1", n-before)
	}

	// Another cause: one more run, and the body's note replaced.
	h.target.Applied = nil
	stallCauses["a kind cannot be read"].brk(h)
	h.pollErr()
	h.pollErr()
	h.pollErr()
	if n := len(h.srv.CheckRuns(owner, repo, h.base)); n != before+2 {
		t.Fatalf("%d check runs for two causes, want 2", n-before)
	}
	if run := h.check(h.base); !strings.Contains(run.Title, "could not read the cluster") {
		t.Fatalf("check %q", run.Title)
	}
	body = h.openPR().Body
	if strings.Count(body, "cannot check this pull request") != 1 || !strings.Contains(body, "refused a read") {
		t.Fatalf("the body's note is not the new cause:\n%s", body)
	}

	// Recovered: the verdict as before, the note gone, then idle.
	h.target.Lister = snapshotAt(h.live)
	h.poll()
	if run := h.check(h.base); run.Conclusion != good.Conclusion || run.Title != good.Title {
		t.Fatalf("after recovery: check %s %q, want %s %q", run.Conclusion, run.Title, good.Conclusion, good.Title)
	}
	if body := h.openPR().Body; strings.Contains(body, "cannot check") || strings.Contains(body, prbody.StallMarker) {
		t.Fatalf("the note outlived its cause:\n%s", body)
	}
	if out := h.poll(); !out.Idle {
		t.Fatalf("then nothing moved: want idle, have %+v", out)
	}
}

// A read that failed on the way (no answer from the API server) says
// nothing about the target: no check run, no write at all.
func TestNetworkFailureWritesNothing(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	h.target.Lister = brokenLister{}
	mark := h.srv.Counters()
	for i := 0; i < 3; i++ {
		if err := h.pollErr(); err == nil {
			t.Fatal("the poll passed")
		}
	}
	if d := h.srv.Counters().Sub(mark); d.Mutating != 0 {
		t.Fatalf("a network failure made %d writes", d.Mutating)
	}
}
