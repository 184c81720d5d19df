package commands

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/config"
)

// Discovery again (DESIGN §13): the clusters' Flux Kustomizations and Argo
// CD Applications are listed again every poll interval. Listing them costs
// one list per tool and namespace and one read per GitRepository, less
// than the poll itself, which reads each of them and lists every kind its
// targets span; and a new Kustomization becomes a target within one
// interval. When the set of discovered targets changed, a new generation
// is built in full and replaces the running one, as a config reload does.

// rediscover returns the generation to run when the discovered targets
// changed, nil when they did not or discovery failed: a failed discovery
// says nothing of the targets, so the running set stays.
func (s *service) rediscover(ctx context.Context, gen *generation) *generation {
	found, err := gen.discover(ctx)
	if err != nil {
		s.log.Error("discovery failed; the discovered targets stay", "error", err.Error())
		if s.reloaded != nil {
			s.reloaded(nil, err)
		}
		return nil
	}
	was, now := discoveredSet(gen.runner.Targets, gen.cfg), discoveredSet(found, gen.cfg)
	if slices.Equal(was, now) {
		return nil
	}
	next, err := s.generationOf(ctx, gen.cfg, gen.raw)
	if err != nil {
		s.log.Error("the discovered targets changed but the runner could not be built; the running one stays", "error", err.Error())
		if s.reloaded != nil {
			s.reloaded(nil, err)
		}
		return nil
	}
	// A target no longer discovered is no longer polled; its pull request
	// stays as it is, never closed because discovery lost it.
	s.log.Info("discovered targets changed", "added", setMinus(now, was), "gone", setMinus(was, now))
	return next
}

// discoveredSet is each discovered target's name and config, sorted: two
// sets are the same targets when they are equal. A discovered target is
// one the config does not write (a discovered name never is a written
// one's).
func discoveredSet(targets []*bot.Target, cfg *config.Config) []string {
	written := map[string]bool{}
	for _, t := range cfg.Targets {
		written[t.Name] = true
	}
	var out []string
	for _, t := range targets {
		if !written[t.Config.Name] {
			b, _ := json.Marshal(t.Config)
			out = append(out, string(b))
		}
	}
	slices.Sort(out)
	return out
}

// setMinus names the targets of a that b lacks.
func setMinus(a, b []string) []string {
	var out []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			var t struct{ Name string }
			json.Unmarshal([]byte(s), &t)
			out = append(out, t.Name)
		}
	}
	return out
}
