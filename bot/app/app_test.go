package app

import (
	"testing"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/bot/attribution"
	"github.com/driftback/driftback/bot/prbody"
	"github.com/driftback/driftback/config"
)

// The default installation stamps nothing (its names are what earlier
// versions wrote); another one stamps its name on the check run, and a
// pull request belongs to the installation its hidden state names.
func TestAnInstallationKnowsItsOwnWrites(t *testing.T) {
	def := &App{Instance: config.DefaultInstance}
	staging := &App{Instance: "staging"}
	tc := config.Target{Name: "shop"}
	if def.Stamp() != "" || def.CheckName(tc) != tc.CheckName() {
		t.Errorf("default: stamp %q, check %q", def.Stamp(), def.CheckName(tc))
	}
	if staging.Stamp() != "staging" || staging.CheckName(tc) != tc.CheckName()+" (staging)" {
		t.Errorf("staging: stamp %q, check %q", staging.Stamp(), staging.CheckName(tc))
	}
	body := prbody.Render(prbody.Input{Target: "shop", Plan: &analyzer.Plan{Root: "overlays/prod"},
		State: prbody.State{Version: 1, Target: "shop", Instance: "staging"}, Attribution: attribution.New(nil, nil)})
	theirs := &github.PullRequest{Body: github.String(body)}
	if InstanceOf(theirs) != "staging" || !staging.Owns(theirs) || def.Owns(theirs) {
		t.Errorf("a staging pull request: instance %q, staging owns %v, default owns %v", InstanceOf(theirs), staging.Owns(theirs), def.Owns(theirs))
	}
	// A body without a state (a person's pull request, or one from before
	// instances) is the default installation's.
	plain := &github.PullRequest{Body: github.String("fixes the image")}
	if InstanceOf(plain) != config.DefaultInstance || !def.Owns(plain) || staging.Owns(plain) {
		t.Errorf("a plain pull request: instance %q", InstanceOf(plain))
	}
}
