package bot

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/githubtest"
)

// Safety under partial reads and lost writes (issue 17, items 1, 2, 4, 5).

// withoutKind lists the snapshot as a lister that returned without one
// kind would: with a nil error.
func withoutKind(path, kind string) cluster.Lister {
	return listerFunc(func(ctx context.Context, s cluster.Scope) ([]cluster.Object, error) {
		read, err := cluster.ObjectFileLister{Path: path}.List(ctx, s)
		var out []cluster.Object
		for _, o := range read.Objects {
			if o.Object["kind"] != kind {
				out = append(out, o)
			}
		}
		return out, err
	})
}

// Item 1: a kind the target renders that the read lacks is no verdict:
// the correct PR stays open with its branch, and the check says the
// cluster could not be read.
func TestUnreadKindKeepsThePR(t *testing.T) {
	for name, lister := range map[string]func(h *harness) cluster.Lister{
		"a lister without a kind": func(h *harness) cluster.Lister { return withoutKind(h.live, "Deployment") },
		"an empty read": func(*harness) cluster.Lister {
			return listerFunc(func(context.Context, cluster.Scope) ([]cluster.Object, error) { return nil, nil })
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, writeThroughOnly(t))
			h.poll()
			pr := h.openPR()
			head, _ := h.srv.Branch(owner, repo, branch)
			h.target.Lister = lister(h)
			if err := h.pollErr(); err == nil || !strings.Contains(err.Error(), "could not be read") {
				t.Fatalf("err = %v", err)
			}
			if got := h.openPR(); got.Number != pr.Number || len(got.Comments) != 0 {
				t.Fatalf("the PR was touched: %+v", got)
			}
			if now, ok := h.srv.Branch(owner, repo, branch); !ok || now != head {
				t.Fatal("the branch was deleted or moved")
			}
			if run := h.check(h.base); run.Conclusion == "success" || !strings.Contains(run.Title, "could not read the cluster") {
				t.Fatalf("check %+v", run)
			}
			// Read in full again: the same PR, nothing lost.
			h.target.Lister = snapshotAt(h.live)
			h.poll()
			if got := h.openPR(); got.Number != pr.Number || len(h.prs()) != 1 {
				t.Fatalf("prs %+v", h.prs())
			}
		})
	}
}

// Item 2: a person's commit on the branch is never overwritten, also when
// the PR is closed.
func TestHumanCommitWithoutOpenPRIsNeverOverwritten(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	pr := h.openPR()
	if !h.srv.ClosePR(owner, repo, pr.Number) {
		t.Fatal("close")
	}
	human := h.srv.Commit(owner, repo, branch, "alice", map[string][]byte{"notes.txt": []byte("mine\n")})
	// New drift, a new edit set: driftback would like to propose again.
	h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 66s", 1))
	out := h.poll()
	if now, _ := h.srv.Branch(owner, repo, branch); now != human {
		t.Fatalf("the person's commit was overwritten (head %s, want %s)", now, human)
	}
	if len(h.prs()) != 1 || out.PR != 0 {
		t.Fatalf("a PR was opened onto a person's branch: %+v", h.prs())
	}
	if run := h.check(h.base); !strings.Contains(run.Summary, "did not make") {
		t.Fatalf("the check does not say why: %+v", run)
	}
}

// Item 4: the branch moved but the body update did not land; the next poll
// knows the commit as driftback's own and does not freeze the PR.
func TestLostBodyUpdateIsNoFreeze(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 66s", 1))
	h.srv.InjectFault(githubtest.Fault{Method: "PATCH", Path: "/repos/{owner}/{repo}/pulls/{pull_number}", Status: 502, Count: 5})
	if err := h.pollErr(); err == nil {
		t.Fatal("the body update did not fail")
	}
	pushed, _ := h.srv.Branch(owner, repo, branch)
	out := h.poll()
	if out.Frozen || out.Pushed {
		t.Fatalf("frozen=%v pushed=%v after a lost body update", out.Frozen, out.Pushed)
	}
	if got := h.openPR(); !strings.Contains(got.Body, "66s") || !strings.Contains(got.Body, pushed) {
		t.Fatalf("body not brought up to date:\n%s", got.Body)
	}
}

// Item 4: only this App's bot account makes driftback's commits. Another
// App's commit with the same trailers, pushed onto the branch, is someone
// else's: the PR freezes and the commit is never overwritten.
func TestOtherAppsCommitWithOurTrailersIsForeign(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	const otherApp, otherInst = 5151, 515
	h.srv.RegisterApp(otherApp, &key(t).PublicKey)
	h.srv.SetAppSlug(otherApp, "copycat")
	h.srv.AddInstallation(otherApp, otherInst, owner)
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key(t))})
	other, err := githubapi.NewClient(githubapi.AppAuth{AppID: otherApp, PrivateKey: pemKey, InstallationID: otherInst, BaseURL: h.srv.URL() + "/"},
		githubapi.ClientOptions{Base: h.srv.Client().Transport, MutationGap: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ours, _ := h.srv.Branch(owner, repo, branch)
	head, _, err := other.Git.GetCommit(ctx, owner, repo, ours)
	if err != nil {
		t.Fatal(err)
	}
	// The same message (trailers included), tree and parent: only the
	// author differs.
	copied, _, err := other.Git.CreateCommit(ctx, owner, repo, &github.Commit{Message: head.Message, Tree: head.Tree, Parents: head.Parents}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref := &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: copied.SHA}}
	if _, _, err := other.Git.UpdateRef(ctx, owner, repo, ref, true); err != nil {
		t.Fatal(err)
	}
	if c, _, _ := other.Repositories.GetCommit(ctx, owner, repo, copied.GetSHA(), nil); c.GetAuthor().GetLogin() != "copycat[bot]" || c.GetAuthor().GetType() != "Bot" {
		t.Fatalf("setup: the copy is authored by %+v", c.GetAuthor())
	}

	h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 66s", 1))
	out := h.poll()
	if now, _ := h.srv.Branch(owner, repo, branch); now != copied.GetSHA() {
		t.Fatalf("the other App's commit was overwritten (head %s, want %s)", now, copied.GetSHA())
	}
	if !out.Frozen || out.Pushed {
		t.Fatalf("frozen=%v pushed=%v: another App's commit was taken for driftback's", out.Frozen, out.Pushed)
	}
}

// githubapi.AppLogin reads the App's bot account from GitHub.
func TestAppLoginIsTheSlugsBot(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key(t))})
	login, err := githubapi.AppLogin(context.Background(), githubapi.AppAuth{AppID: appID, PrivateKey: pemKey, BaseURL: h.srv.URL() + "/"},
		githubapi.ClientOptions{Base: h.srv.Client().Transport})
	if err != nil || login != "driftback[bot]" {
		t.Fatalf("githubapi.AppLogin = %q, %v", login, err)
	}
	if f := h.srv.Failures(); len(f) > 0 {
		t.Fatalf("outside the description: %+v", f)
	}
}

// Item 5: a poll that ended between closing the PR and deleting the branch
// leaves no orphan: the next poll deletes it.
func TestBranchLeftAfterCloseIsRemoved(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	h.setLive(renderedLive(t))
	h.srv.InjectFault(githubtest.Fault{Method: "DELETE", Path: "/repos/{owner}/{repo}/git/refs/{ref}", Status: 500, Count: 5})
	if err := h.pollErr(); err == nil {
		t.Fatal("the delete did not fail")
	}
	if _, ok := h.srv.Branch(owner, repo, branch); !ok || h.prs()[0].State != "closed" {
		t.Fatal("setup: want the PR closed and the branch left")
	}
	h.poll()
	if _, ok := h.srv.Branch(owner, repo, branch); ok {
		t.Fatal("driftback left its branch behind")
	}
}

// Issue 54: "drift gone" says nothing about a person's commit on the
// branch: the frozen pull request stays open, its branch with it, and the
// check run says why.
func TestFrozenPRStaysOpenWhenTheDriftGoes(t *testing.T) {
	h := newHarness(t, writeThroughOnly(t))
	h.poll()
	alices := h.srv.Commit(owner, repo, branch, "alice", map[string][]byte{"notes.txt": []byte("mine\n")})
	if out := h.poll(); !out.Frozen {
		t.Fatal("setup: not frozen")
	}
	h.setLive(renderedLive(t))
	out := h.poll()
	pr := h.openPR()
	if !out.Frozen || out.Number != pr.Number || len(pr.Comments) != 0 {
		t.Fatalf("want the frozen pull request left open, without a comment: %+v, %+v", out, pr)
	}
	if head, ok := h.srv.Branch(owner, repo, branch); !ok || head != alices {
		t.Fatal("driftback deleted or moved the branch holding alice's commit")
	}
	if run := h.check(h.base); !strings.Contains(run.Summary, "holds a commit driftback did not make, so the pull request stays open") {
		t.Fatalf("the check run does not say why the pull request stays open: %q", run.Summary)
	}
	// Closed by a person, it stays closed, and the branch stays.
	h.srv.ClosePR(owner, repo, pr.Number)
	h.poll()
	if head, ok := h.srv.Branch(owner, repo, branch); !ok || head != alices {
		t.Fatal("driftback deleted the branch holding alice's commit once its pull request was closed")
	}
}

// Issue 42 item 5: GitHub attributes a commit by its author e-mail, which
// anyone can write. A person's commit that names driftback's bot as author
// (and committer), with driftback's trailers, is still theirs: only a
// commit GitHub signed for the App is driftback's, so the PR freezes and
// the commit stays.
func TestCommitSpoofingTheBotIsForeign(t *testing.T) {
	for _, c := range []struct {
		name string
		push func(bot, msg string) githubtest.Push
	}{
		{"unsigned", func(bot, msg string) githubtest.Push {
			return githubtest.Push{By: "mallory", Message: msg, AuthorName: "driftback[bot]", AuthorEmail: bot, CommitterName: "driftback[bot]", CommitterEmail: bot}
		}},
		{"signed by the person, naming the bot", func(bot, msg string) githubtest.Push {
			return githubtest.Push{By: "mallory", Message: msg, AuthorName: "driftback[bot]", AuthorEmail: bot, CommitterEmail: bot, SignedBy: "mallory"}
		}},
		{"signed and committed by the person, authored as the bot", func(bot, msg string) githubtest.Push {
			return githubtest.Push{By: "mallory", Message: msg, AuthorName: "driftback[bot]", AuthorEmail: bot, SignedBy: "mallory"}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, writeThroughOnly(t))
			h.poll()
			ours, _ := h.srv.Branch(owner, repo, branch)
			head, _, err := h.bot.GitHub.Git.GetCommit(context.Background(), owner, repo, ours)
			if err != nil {
				t.Fatal(err)
			}
			p := c.push(h.srv.Email("driftback[bot]"), head.GetMessage())
			p.Files = map[string][]byte{"notes.txt": []byte("mine\n")}
			spoof := h.srv.PushCommit(owner, repo, branch, p)

			h.setLive(strings.Replace(writeThroughOnly(t), "value: 60s", "value: 66s", 1))
			out := h.poll()
			if now, _ := h.srv.Branch(owner, repo, branch); now != spoof {
				t.Fatalf("the person's commit was overwritten (head %s, want %s)", now, spoof)
			}
			if !out.Frozen || out.Pushed {
				t.Fatalf("frozen=%v pushed=%v: a commit naming the bot was taken for driftback's", out.Frozen, out.Pushed)
			}
		})
	}
}
