package app

import (
	"testing"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/bot/attribution"
	"github.com/driftback/driftback/bot/prbody"
	"github.com/driftback/driftback/config"
)

// The default installation stamps nothing (its names are what earlier
// versions wrote); another one stamps its name on the check run. A pull
// request is an installation's own only when this App's bot opened it and
// its state names that installation.
func TestAnInstallationKnowsItsOwnWrites(t *testing.T) {
	def := &App{Instance: config.DefaultInstance, Login: "driftback[bot]"}
	staging := &App{Instance: "staging", Login: "driftback[bot]"}
	tc := config.Target{Name: "shop"}
	if def.Stamp() != "" || def.CheckName(tc) != tc.CheckName() {
		t.Errorf("default: stamp %q, check %q", def.Stamp(), def.CheckName(tc))
	}
	if staging.Stamp() != "staging" || staging.CheckName(tc) != tc.CheckName()+" (staging)" {
		t.Errorf("staging: stamp %q, check %q", staging.Stamp(), staging.CheckName(tc))
	}
	body := func(instance string) *string {
		return github.String(prbody.Render(prbody.Input{Target: "shop", Plan: &analyzer.Plan{Root: "overlays/prod"},
			State: prbody.State{Version: 1, Target: "shop", Instance: instance}, Attribution: attribution.New(nil, nil)}))
	}
	by := func(login, typ string) *github.User {
		return &github.User{Login: github.String(login), Type: github.String(typ)}
	}
	for _, c := range []struct {
		name         string
		pr           *github.PullRequest
		def, staging bool
		holder       string // as the other installation sees it
	}{
		{"staging's", &github.PullRequest{User: by("driftback[bot]", "Bot"), Body: body("staging")}, false, true, "installation `staging`"},
		{"the default's", &github.PullRequest{User: by("Driftback[bot]", "Bot"), Body: body("")}, true, false, "installation `default`"},
		// A person who pasted driftback's body, state and all.
		{"a person's, with driftback's state", &github.PullRequest{User: by("alice", "User"), Body: body("")}, false, false, "`alice`"},
		{"a person's", &github.PullRequest{User: by("alice", "User"), Body: github.String("fixes the image")}, false, false, "`alice`"},
		// Another App: another driftback at the default instance, say.
		{"another App's", &github.PullRequest{User: by("other[bot]", "Bot"), Body: body("")}, false, false, "`other[bot]`"},
		// A user account named like the bot is not the bot.
		{"a user named like the bot", &github.PullRequest{User: by("driftback[bot]", "User"), Body: body("")}, false, false, "`driftback[bot]`"},
		{"the bot's, its state removed", &github.PullRequest{User: by("driftback[bot]", "Bot"), Body: github.String("edited")}, false, false,
			"`driftback[bot]` (a pull request without driftback's state)"},
	} {
		if def.Owns(c.pr) != c.def || staging.Owns(c.pr) != c.staging {
			t.Errorf("%s: default owns %v, staging owns %v; want %v, %v", c.name, def.Owns(c.pr), staging.Owns(c.pr), c.def, c.staging)
		}
		other := def
		if c.def {
			other = staging
		}
		if h, _ := other.HolderOf(c.pr); h.String() != c.holder {
			t.Errorf("%s: holder %q, want %q", c.name, h.String(), c.holder)
		}
	}
	// Without its bot login the bot owns nothing (it cannot tell).
	if (&App{Instance: config.DefaultInstance}).Owns(&github.PullRequest{User: by("driftback[bot]", "Bot"), Body: body("")}) {
		t.Error("an App without a login owns a pull request")
	}
}

// Two deployments of one App at one instance tell their writes apart by
// the deployment stamped beside the instance: another's pull request is
// not this one's while it was updated within DeploymentHold. A pull
// request stamped with no deployment (an earlier version's), and any to a
// deployment that cannot tell which it is, is the instance's, as before.
func TestADeploymentKnowsItsOwnWrites(t *testing.T) {
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	eu := &App{Instance: config.DefaultInstance, Login: "driftback[bot]", Deployment: "eu", Now: clock}
	pr := func(deployment string, age time.Duration) *github.PullRequest {
		body := prbody.Render(prbody.Input{Target: "shop", Plan: &analyzer.Plan{Root: "overlays/prod"},
			State: prbody.State{Version: 1, Target: "shop", Deployment: deployment}, Attribution: attribution.New(nil, nil)})
		return &github.PullRequest{User: &github.User{Login: github.String("driftback[bot]"), Type: github.String("Bot")},
			Body: github.String(body), UpdatedAt: &github.Timestamp{Time: now.Add(-age)}}
	}
	for _, c := range []struct {
		name   string
		a      *App
		pr     *github.PullRequest
		holder string // "" when a owns it
	}{
		{"its own", eu, pr("eu", 0), ""},
		{"another's, just written", eu, pr("us", 0), "another deployment (`us`) of this installation"},
		{"another's, within the hold", eu, pr("us", DeploymentHold-time.Second), "another deployment (`us`) of this installation"},
		{"another's, past the hold", eu, pr("us", DeploymentHold), ""},
		{"an earlier version's", eu, pr("", 0), ""},
		{"another's, to one that cannot tell", &App{Instance: config.DefaultInstance, Login: "driftback[bot]", Now: clock}, pr("us", 0), ""},
	} {
		h, ok := c.a.HolderOf(c.pr)
		if ok != (c.holder == "") || (!ok && h.String() != c.holder) {
			t.Errorf("%s: owned %v, holder %q; want holder %q", c.name, ok, h.String(), c.holder)
		}
	}
}
