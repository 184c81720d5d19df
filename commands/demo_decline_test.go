package commands

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/internal/githubtest"
)

// The demo's reviewer unticks a row by what its line says: a pull request
// with no such row fails the demo rather than printing a decline that did
// not happen, and nothing is written or polled.
func TestDemoDeclineRowWithoutAMatchingRowFails(t *testing.T) {
	ctx := context.Background()
	srv, b, err := demoGitHub(ctx, githubtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	srv.CreateRepo("acme", "shop", "main", map[string][]byte{"README.md": []byte("shop\n")})
	srv.Commit("acme", "shop", "driftback/shop-prod", "alice", map[string][]byte{"a.yaml": []byte("a: 1\n")})
	body := "- [x] <code>Deployment/shop/web</code> <code>spec.replicas</code>: 2 → 3 <!-- driftback:edit 0123abcd -->\n"
	pr, _, err := b.GitHub.PullRequests.Create(ctx, "acme", "shop", &github.NewPullRequest{Title: github.String("t"),
		Head: github.String("driftback/shop-prod"), Base: github.String("main"), Body: github.String(body)})
	if err != nil {
		t.Fatal(err)
	}
	polled := false
	poll := func() (bot.Outcome, error) { polled = true; return bot.Outcome{}, nil }
	if _, err := declineRow(ctx, b, "CACHE&#95;TTL", poll); err == nil || !strings.Contains(err.Error(), "CACHE&#95;TTL") {
		t.Errorf("no matching row: err %v", err)
	}
	if polled {
		t.Error("polled after unticking nothing")
	}
	got, _, err := b.GitHub.PullRequests.Get(ctx, "acme", "shop", pr.GetNumber())
	if err != nil || got.GetBody() != body {
		t.Errorf("the body changed: %q %v", got.GetBody(), err)
	}
	// A row that matches, and a poll that declines nothing, fails too.
	if _, err := declineRow(ctx, b, "spec.replicas", poll); err == nil || !polled {
		t.Errorf("a poll that declined nothing: err %v, polled %v", err, polled)
	}
}
