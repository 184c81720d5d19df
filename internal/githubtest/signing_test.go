package githubtest

import (
	"testing"

	"github.com/google/go-github/v62/github"
)

// verificationOf reads a commit's verification from both APIs that show
// it and checks they agree.
func verificationOf(t *testing.T, e *env, sha string) (*github.SignatureVerification, *github.RepositoryCommit) {
	t.Helper()
	rc := must(e.gh.Repositories.GetCommit(e.ctx, tOwner, tRepo, sha, nil))
	gc := must(e.gh.Git.GetCommit(e.ctx, tOwner, tRepo, sha))
	a, b := rc.GetCommit().GetVerification(), gc.GetVerification()
	if a.GetVerified() != b.GetVerified() || a.GetReason() != b.GetReason() || a.GetPayload() != b.GetPayload() {
		t.Fatalf("the two APIs disagree: %+v vs %+v", a, b)
	}
	return a, rc
}

// An App's commit through the Git Data API with no identity of its own is
// GitHub's to sign: verified, authored by the App's bot, committed by
// GitHub (web-flow). With an author it is the App's own, unsigned.
func TestAppCommitsThroughTheAPIAreSignedByGitHub(t *testing.T) {
	e := newEnv(t)
	base := must(e.gh.Git.GetCommit(e.ctx, tOwner, tRepo, e.baseSH))
	plain := must(e.gh.Git.CreateCommit(e.ctx, tOwner, tRepo, &github.Commit{
		Message: github.String("m"), Tree: base.Tree, Parents: []*github.Commit{{SHA: base.SHA}}}, nil))
	v := plain.GetVerification()
	if !v.GetVerified() || v.GetReason() != "valid" || v.GetSignature() == "" || v.GetPayload() == "" {
		t.Fatalf("verification %+v", v)
	}
	if plain.GetCommitter().GetName() != "GitHub" || plain.GetCommitter().GetEmail() != "noreply@github.com" || plain.GetAuthor().GetName() != "driftback[bot]" {
		t.Fatalf("author %+v committer %+v", plain.GetAuthor(), plain.GetCommitter())
	}
	v, rc := verificationOf(t, e, plain.GetSHA())
	if !v.GetVerified() || rc.GetAuthor().GetLogin() != "driftback[bot]" || rc.GetAuthor().GetType() != "Bot" || rc.GetCommitter().GetLogin() != "web-flow" {
		t.Fatalf("verification %+v author %+v committer %+v", v, rc.GetAuthor(), rc.GetCommitter())
	}

	custom := must(e.gh.Git.CreateCommit(e.ctx, tOwner, tRepo, &github.Commit{
		Message: github.String("m"), Tree: base.Tree, Parents: []*github.Commit{{SHA: base.SHA}},
		Author: &github.CommitAuthor{Name: github.String("driftback[bot]"), Email: github.String(e.srv.Email("driftback[bot]"))}}, nil))
	if v := custom.GetVerification(); v.GetVerified() || v.GetReason() != "unsigned" || v.Signature != nil || v.Payload != nil {
		t.Fatalf("a commit with a custom author was signed: %+v", v)
	}
	// A signature the caller made is kept, and no account holds its key.
	armored := "-----BEGIN PGP SIGNATURE-----\n\niQEzBAABCAAdFiEE\n-----END PGP SIGNATURE-----\n"
	signed := must(e.gh.Git.CreateCommit(e.ctx, tOwner, tRepo, &github.Commit{
		Message: github.String("m"), Tree: base.Tree, Parents: []*github.Commit{{SHA: base.SHA}},
		Verification: &github.SignatureVerification{Signature: github.String(armored)}}, nil))
	if v := signed.GetVerification(); v.GetVerified() || v.GetReason() != "unknown_key" || v.GetSignature() != armored {
		t.Fatalf("a caller's signature: %+v", v)
	}
}

// Pushed commits are unsigned unless the pusher signs them; a signature
// verifies only when the committer e-mail is the signer's, whoever the
// author claims to be.
func TestPushedCommitsSignedAndUnsigned(t *testing.T) {
	e := newEnv(t)
	bot := e.srv.Email("driftback[bot]")
	for _, c := range []struct {
		name   string
		push   Push
		reason string
	}{
		{"a plain push", Push{By: "alice"}, "unsigned"},
		{"the Commit helper", Push{}, "unsigned"},
		{"signed by the pusher", Push{By: "alice", SignedBy: "alice"}, "valid"},
		{"signed, author spoofed", Push{By: "mallory", AuthorName: "driftback[bot]", AuthorEmail: bot, SignedBy: "mallory"}, "valid"},
		{"signed, committer spoofed", Push{By: "mallory", AuthorEmail: bot, CommitterEmail: bot, SignedBy: "mallory"}, "bad_email"},
		{"unsigned, both spoofed", Push{By: "mallory", AuthorName: "driftback[bot]", AuthorEmail: bot, CommitterName: "driftback[bot]", CommitterEmail: bot}, "unsigned"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var sha string
			if c.push.By == "" {
				sha = e.srv.Commit(tOwner, tRepo, "topic", "alice", map[string][]byte{"x": []byte(c.name)})
			} else {
				c.push.Files = map[string][]byte{"x": []byte(c.name)}
				sha = e.srv.PushCommit(tOwner, tRepo, "topic", c.push)
			}
			v, rc := verificationOf(t, e, sha)
			if v.GetReason() != c.reason || v.GetVerified() != (c.reason == "valid") {
				t.Fatalf("verification %+v, want reason %s", v, c.reason)
			}
			if c.reason != "unsigned" && (v.GetSignature() == "" || v.GetPayload() == "") {
				t.Fatalf("a signed commit without its signature or payload: %+v", v)
			}
			if c.push.AuthorEmail == bot && rc.GetAuthor().GetLogin() != "driftback[bot]" {
				t.Fatalf("GitHub attributes a commit by its author e-mail; got %+v", rc.GetAuthor())
			}
		})
	}
}
