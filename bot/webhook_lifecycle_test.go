package bot

import (
	"slices"
	"strings"
	"testing"
)

// The installation's and its repositories' deliveries wake the targets
// that can work again, past the backoff their failures earned, and follow
// a repository that moved; the others wake nothing (issue 42, item 4).
func TestWebhookLifecycleWakesTargetsThatCanWorkAgain(t *testing.T) {
	g := newHookRig(t)
	main, _ := g.srv.Branch(owner, repo, "main")
	backoff := func() {
		g.r.mu.Lock()
		g.r.skip = map[string]int{"shop-prod": 7, "shop-release": 7, "other-prod": 7}
		g.r.mu.Unlock()
	}
	all := []string{"shop-prod", "shop-release", "other-prod"}
	shop := []string{"shop-prod", "shop-release"}
	steps := []struct {
		name  string
		setup func()
		event func() []byte
		want  []string
	}{
		{"suspended", func() { g.srv.SuspendInstallation(instID, true) }, nil, nil},
		{"unsuspended", func() { g.srv.SuspendInstallation(instID, false) }, nil, all},
		{"new permissions accepted", nil, nil, all},
		{"a repository added", nil, nil, []string{"other-prod"}},
		{"archived", func() { g.srv.Archive(owner, repo, true) }, nil, nil},
		{"unarchived", func() { g.srv.Archive(owner, repo, false) }, nil, shop},
		{"renamed", func() { g.srv.RenameRepo(owner, "other", "other-renamed") }, nil, []string{"other-prod"}},
	}
	for _, s := range steps {
		backoff()
		if s.setup != nil {
			s.setup()
		}
		w := map[string]func() int{
			"suspended":                func() int { return g.deliver(g.srv.InstallationEvent(instID, "suspend", "alice")) },
			"unsuspended":              func() int { return g.deliver(g.srv.InstallationEvent(instID, "unsuspend", "alice")) },
			"new permissions accepted": func() int { return g.deliver(g.srv.InstallationEvent(instID, "new_permissions_accepted", "alice")) },
			"a repository added": func() int {
				return g.deliver(g.srv.InstallationRepositoriesEvent(instID, "added", "alice", owner+"/other"))
			},
			"archived":   func() int { return g.deliver(g.srv.RepositoryEvent(owner, repo, "archived", "", "alice")) },
			"unarchived": func() int { return g.deliver(g.srv.RepositoryEvent(owner, repo, "unarchived", "", "alice")) },
			"renamed": func() int {
				return g.deliver(g.srv.RepositoryEvent(owner, "other-renamed", "renamed", "other", "alice"))
			},
		}[s.name]
		if code := w(); code != 202 {
			t.Errorf("%s: status %d", s.name, code)
		}
		got := g.woken()
		if !slices.Equal(got, s.want) {
			t.Errorf("%s woke %v, want %v", s.name, got, s.want)
		}
		for _, name := range got {
			if g.r.inBackoff(name) {
				t.Errorf("%s: %s is still backing off", s.name, name)
			}
		}
	}
	// Once a poll found where the renamed repository is, a push there
	// wakes its target, though the config names the old one.
	other := g.r.Targets[2]
	if _, err := g.bot.Reconcile(g.ctx, other); err != nil {
		t.Fatal(err)
	}
	g.deliver(g.srv.PushEvent(owner, "other-renamed", "main", strings.Repeat("0", 40), main, "alice"))
	if got := g.woken(); !slices.Equal(got, []string{"other-prod"}) {
		t.Errorf("a push to the renamed repository woke %v", got)
	}
	if f := g.srv.Failures(); len(f) != 0 {
		t.Errorf("deliveries outside GitHub's description: %+v", f)
	}
}
