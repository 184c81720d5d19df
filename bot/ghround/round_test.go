package ghround

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot/app"
	"github.com/driftback/driftback/bot/pollstate"
	"github.com/driftback/driftback/config"
)

// Issue 54, item 9: a read the round shares runs under a context of its
// own: the target that asked first timing out (or stopped) fails only
// itself, and the others waiting for the same read get its answer.
func TestSharedReadOutlivesTheFirstAsker(t *testing.T) {
	entered, release, dropped := make(chan struct{}, 4), make(chan struct{}), make(chan struct{}, 4)
	srv := headServer(entered, release, dropped)
	defer srv.Close()
	gh := github.NewClient(nil)
	gh.BaseURL, _ = url.Parse(srv.URL + "/")
	poll := func(name string) *pollstate.Poll {
		return &pollstate.Poll{Place: app.Place{Target: config.Target{Name: name, Repo: "acme/shop"}, Log: slog.New(slog.DiscardHandler),
			Owner: "acme", Repo: "shop", BaseBranch: "main"}}
	}
	var r Reader
	round := NewRound(nil)
	first, stop := context.WithCancel(context.Background())
	firstDone := make(chan error, 1)
	go func() {
		_, err := r.BaseHead(first, gh, round, poll("shop-a"))
		firstDone <- err
	}()
	<-entered // the first target's read is at GitHub
	second := make(chan string, 1)
	go func() {
		sha, err := r.BaseHead(context.Background(), gh, round, poll("shop-b"))
		if err != nil {
			t.Errorf("the second target: %v", err)
		}
		second <- sha
	}()
	stop() // the first target's timeout
	if err := <-firstDone; err == nil {
		t.Error("the first target, stopped, read the head all the same")
	}
	close(release)
	if sha := <-second; sha != "abc123" {
		t.Errorf("the second target read %q, want abc123", sha)
	}

}

// A shared read every asker gave up on is stopped: it would else run out
// its own deadline for no one.
func TestSharedReadStopsWhenNoOneWaits(t *testing.T) {
	entered, dropped := make(chan struct{}, 1), make(chan struct{}, 1)
	srv := headServer(entered, make(chan struct{}), dropped)
	defer srv.Close()
	gh := github.NewClient(nil)
	gh.BaseURL, _ = url.Parse(srv.URL + "/")
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		var r Reader
		_, err := r.BaseHead(ctx, gh, NewRound(nil), &pollstate.Poll{Place: app.Place{Target: config.Target{Name: "shop-a", Repo: "acme/shop"},
			Log: slog.New(slog.DiscardHandler), Owner: "acme", Repo: "shop", BaseBranch: "main"}})
		done <- err
	}()
	<-entered
	stop()
	if err := <-done; err == nil {
		t.Error("a stopped target read the head")
	}
	<-dropped // the request was cancelled
}

// headServer answers a base branch's head once release is closed, saying
// on entered when a request arrived and on dropped when one was
// cancelled before.
func headServer(entered, release, dropped chan struct{}) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		entered <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
			dropped <- struct{}{}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ref":"refs/heads/main","object":{"sha":"abc123","type":"commit"}}`))
	}))
}
