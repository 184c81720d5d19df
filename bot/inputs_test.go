package bot

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/githubtest"
)

// appliedAt is a GitOps tool that applied *rev, as Flux writes it.
func appliedAt(rev *string) func(context.Context) (cluster.Applied, error) {
	return func(context.Context) (cluster.Applied, error) {
		return cluster.Applied{Revision: *rev, Raw: "main@sha1:" + *rev}, nil
	}
}

// writesSince counts the content writes GitHub saw after the first skip
// requests (an installation token is not content), by operation.
func writesSince(srv *githubtest.Server, skip int) (int, map[string]int) {
	ops := map[string]int{}
	n := 0
	for _, r := range srv.Requests()[skip:] {
		if r.Mutating() && !strings.Contains(r.Path, "/app/installations/") {
			n++
			ops[r.Operation]++
		}
	}
	return n, ops
}

// A base commit that touches nothing the target reads is not "something
// moved" (issue 30, item 2): no plan, no check run on it, no branch
// rebuilt onto it. The pull request's head keeps its own check run; the
// verdict on the commit that last changed the target's inputs stands. A
// commit that does touch them (a file of the base the overlay builds on)
// wakes the target, which judges and proposes on it.
func TestUntouchedBaseCommitWritesNothing(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	if out := h.poll(); out.PR == 0 {
		t.Fatalf("first poll: %+v", out)
	}
	head, _ := h.srv.Branch(owner, repo, branch)
	prRun := h.check(head)

	readme := h.srv.Commit(owner, repo, "main", "someone", map[string][]byte{"README.md": []byte("# shop\n")})
	other := h.srv.Commit(owner, repo, "main", "someone", map[string][]byte{"apps/other/kustomization.yaml": []byte("resources: [cm.yaml]\n"),
		"apps/other/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other}\n")})
	skip := len(h.srv.Requests())
	if out := h.poll(); !out.Idle {
		t.Fatalf("a commit that touches no input of %s woke it: %+v", h.target.Config.Root, out)
	}
	if n, ops := writesSince(h.srv, skip); n != 0 {
		t.Fatalf("an untouched base commit cost %d GitHub writes: %v", n, ops)
	}
	for _, sha := range []string{readme, other} {
		if runs := h.srv.CheckRuns(owner, repo, sha); len(runs) != 0 {
			t.Errorf("check runs on the untouched commit %s: %+v", githubapi.ShortSHA(sha), runs)
		}
	}
	if m, _ := h.bot.memory.Get(h.target.Config.Name); m.Base != other {
		t.Errorf("the memo compares with %s, not the head it found the same, %s: the commit of the last plan would have to stay loaded", githubapi.ShortSHA(m.Base), githubapi.ShortSHA(other))
	}
	if out := h.poll(); !out.Idle {
		t.Fatalf("nothing moved since: %+v", out)
	}
	if now, _ := h.srv.Branch(owner, repo, branch); now != head || h.check(head).ID != prRun.ID {
		t.Errorf("the pull request's branch or its check run moved: %s -> %s", githubapi.ShortSHA(head), githubapi.ShortSHA(now))
	}

	// A file the overlay's base reads: the target wakes on this commit.
	web, _ := h.srv.File(owner, repo, "main", "base/web.yaml")
	touched := h.srv.Commit(owner, repo, "main", "someone", map[string][]byte{"base/web.yaml": append([]byte("# owned by web\n"), web...)})
	out := h.poll()
	if out.Idle || out.Plan == nil {
		t.Fatalf("a commit that changed %s's input did not wake it: %+v", h.target.Config.Root, out)
	}
	if run := h.check(touched); run.Conclusion != "neutral" {
		t.Errorf("check run on the touched commit: %+v", run)
	}
	now, _ := h.srv.Branch(owner, repo, branch)
	if strings.Join(h.parents(now), ",") != touched {
		t.Errorf("the branch is not rebuilt on the commit that changed its inputs: parents %v", h.parents(now))
	}
	if again := h.poll(); !again.Idle {
		t.Fatalf("nothing moved since: %+v", again)
	}
}

// The rule holds for a target in sync and for one that reads the revision
// its GitOps tool applied: a new base commit and its application by the
// tool, neither touching the root, write nothing; the memo still wakes
// the target on a live change, judged on the current base head.
func TestUntouchedCommitAppliedByTheToolWritesNothing(t *testing.T) {
	h := newHarness(t, renderedLive(t))
	rev := h.base
	h.target.Applied = appliedAt(&rev)
	h.poll()
	if run := h.check(h.base); run.Conclusion != "success" {
		t.Fatalf("base check: %+v", run)
	}
	readme := h.srv.Commit(owner, repo, "main", "someone", map[string][]byte{"docs/notes.md": []byte("notes\n")})
	skip := len(h.srv.Requests())
	if out := h.poll(); !out.Idle {
		t.Fatalf("base moved, root untouched: want idle, have %+v", out)
	}
	rev = readme // the tool applied it
	if out := h.poll(); !out.Idle {
		t.Fatalf("the tool applied a commit that changes nothing of the root: want idle, have %+v", out)
	}
	if n, ops := writesSince(h.srv, skip); n != 0 {
		t.Fatalf("%d writes: %v", n, ops)
	}
	// Drift: judged, and posted, on the base head as it is now.
	h.setLive(writeThroughOnly(t))
	out := h.poll()
	if out.Idle || out.PR == 0 {
		t.Fatalf("live drift: %+v", out)
	}
	if run := h.check(readme); run.Conclusion != "neutral" {
		t.Errorf("check run on the base head: %+v", run)
	}
}

// A remote base is an input too: with a README commit on the base branch
// the target stays idle, and when the remote base's branch moves it wakes.
func TestUntouchedCommitWithARemoteBase(t *testing.T) {
	h := remoteHarness(t, "v1")
	if out := h.poll(); out.PR == 0 {
		t.Fatalf("outcome %+v", out)
	}
	h.srv.Commit(owner, repo, "main", "someone", map[string][]byte{"README.md": []byte("shop\n")})
	skip := len(h.srv.Requests())
	if out := h.poll(); !out.Idle {
		t.Fatalf("README commit: want idle, have %+v", out)
	}
	if n, ops := writesSince(h.srv, skip); n != 0 {
		t.Fatalf("%d writes: %v", n, ops)
	}
	h.srv.Commit(owner, "platform", "v1", "release", map[string][]byte{
		"web/deployment.yaml": []byte(strings.Replace(remoteDeploy, "containerPort: 8080", "containerPort: 9090", 1)),
	})
	if out := h.poll(); out.Idle || out.Plan == nil {
		t.Fatalf("the remote base moved: want a plan, have %+v", out)
	}
}

// A commit that adds a reader of a file the pull request writes (another
// overlay on the same base) leaves the target's root as it was but may
// change its plan (a write other roots read is guarded): it wakes.
func TestNewReaderOfAWrittenFileWakes(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	if out := h.poll(); out.PR == 0 {
		t.Fatalf("first poll: %+v", out)
	}
	h.srv.Commit(owner, repo, "main", "someone", map[string][]byte{"overlays/staging/kustomization.yaml": []byte("resources: [../../base]\n")})
	if out := h.poll(); out.Idle {
		t.Fatal("a new reader of base/web.yaml, which the pull request writes, did not wake the target")
	}
}

// Another target's pull request or push in the same repository moves the
// repository's counters and push time, which GitHub repeats in every pull
// request's head and base: that is not this target's pull request
// changing, and must not wake it (each would otherwise wake every target
// with a pull request in the repository, and each of them rebuild its
// branch onto the base head of the moment).
func TestAnotherTargetsPushDoesNotWakeThisOne(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	other := *h.target
	other.Config.Name = "shop-other"
	otherLive := filepath.Join(t.TempDir(), "other.yaml")
	if err := os.WriteFile(otherLive, []byte(writeThroughOnly(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	other.Lister = cluster.ObjectFileLister{Path: otherLive}
	h.poll()
	if out, err := h.bot.Reconcile(h.ctx, &other); err != nil || out.PR == 0 {
		t.Fatalf("the other target: %+v, %v", out, err)
	}
	if out := h.poll(); !out.Idle {
		t.Fatalf("another target's new pull request woke this one: %+v", out)
	}
	if err := os.WriteFile(otherLive, []byte(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 90s", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := h.bot.Reconcile(h.ctx, &other); err != nil || !out.Pushed {
		t.Fatalf("the other target: %+v, %v", out, err)
	}
	if out := h.poll(); !out.Idle {
		t.Fatalf("another target's push woke this one: %+v", out)
	}
}
