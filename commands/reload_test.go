package commands

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/bot/metrics"
)

const reloadConfig = `github:
  appID: 1
  privateKeyEnv: DRIFTBACK_TEST_KEY
  installationID: 1
pollInterval: 1h
clusters:
- name: c
  inCluster: true
targets:
- name: a
  repo: acme/a
  root: .
  namespaces: [a]
  cluster: c
  appliedRevision: {head: true}
`

// A reload replaces the running config only with one that validates and
// builds; a broken one is logged and the running one stays. SIGHUP and the
// file watch both only call reloadSoon; this drives it directly.
func TestConfigReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "driftback.yaml")
	write := func(s string) {
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(reloadConfig)
	var logs bytes.Buffer
	svc := &service{path: path, log: slog.New(slog.NewTextHandler(&logs, nil)), metrics: metrics.NewMetrics(), trigger: make(chan struct{}, 1),
		build: func(_ context.Context, in runnerInput) (*built, error) {
			if in.cfg.PollInterval == 2*time.Hour {
				return nil, errors.New("cluster c: in-cluster config: not in a cluster")
			}
			return &built{runner: &bot.Runner{Bot: bot.New(nil, bot.Options{Metrics: in.metrics}), Interval: in.cfg.PollInterval}}, nil
		}}
	gen, err := svc.load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	svc.current.Store(gen)
	type attempt struct {
		gen *generation
		err error
	}
	attempts := make(chan attempt)
	svc.reloaded = func(g *generation, err error) { attempts <- attempt{g, err} }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- svc.serve(ctx) }()
	reload := func(content string) attempt {
		write(content)
		svc.reloadSoon()
		return <-attempts
	}

	// Invalid YAML, then a valid config that cannot be built: both refused,
	// and the first generation keeps running.
	if a := reload(strings.Replace(reloadConfig, "pollInterval: 1h", "pollInterval: [", 1)); a.err == nil || !strings.Contains(a.err.Error(), "driftback.yaml:7: not valid YAML") {
		t.Errorf("broken YAML: %v", a.err)
	}
	if a := reload(strings.Replace(reloadConfig, "pollInterval: 1h", "pollInterval: 2h", 1)); a.err == nil || !strings.Contains(a.err.Error(), "not in a cluster") {
		t.Errorf("unbuildable config: %+v", a)
	}
	if svc.current.Load() != gen {
		t.Fatal("a refused config replaced the running one")
	}
	// A good one goes in.
	a := reload(strings.Replace(reloadConfig, "name: a\n", "name: b\n", 1))
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("serve = %v", err)
	}
	if a.err != nil || a.gen.cfg.Targets[0].Name != "b" || svc.current.Load() != a.gen {
		t.Errorf("good config: %+v", a)
	}
	if strings.Count(logs.String(), "config reload failed; the running config stays") != 2 {
		t.Errorf("no failed reload logged:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), `msg="config reloaded"`) {
		t.Errorf("the reload is not logged:\n%s", logs.String())
	}
}
