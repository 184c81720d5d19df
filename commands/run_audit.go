package commands

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"reflect"
	"strings"
	"sync"

	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
)

// auditTrails keeps each cluster's audit trail (clusters[].audit) across
// config reloads: a reload that leaves a cluster's audit settings alone
// keeps the writes its trail holds, which a webhook-fed trail could not
// read again. A build changes trails only provisionally: the running
// generation keeps reading its own until the new one is up (settle), and
// a build that fails leaves them as they were.
type auditTrails struct {
	mu        sync.Mutex
	byCluster map[string]auditTrail
	// before holds, per cluster whose trail the build in progress replaced
	// or dropped, the trail it had (nil: none).
	before map[string]*auditTrail
}

type auditTrail struct {
	cfg   config.Audit
	trail *cluster.AuditTrail
}

// of is the trail of cluster c, nil when c has no audit source: the one
// kept for it when its settings did not change, a new one otherwise.
func (a *auditTrails) of(c *config.Cluster) *cluster.AuditTrail {
	if a == nil || c == nil || c.Audit == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	kept, ok := a.byCluster[c.Name]
	if ok && reflect.DeepEqual(kept.cfg, *c.Audit) {
		return kept.trail
	}
	a.stage(c.Name)
	t := newAuditTrail(*c.Audit)
	if a.byCluster == nil {
		a.byCluster = map[string]auditTrail{}
	}
	a.byCluster[c.Name] = auditTrail{cfg: *c.Audit, trail: t}
	return t
}

// newAuditTrail is the trail of audit settings a (not yet read): run's
// for a cluster, plan's for --audit-log or the cluster's audit.logFile.
func newAuditTrail(a config.Audit) *cluster.AuditTrail {
	t := cluster.NewAuditTrail(int(a.Keep))
	t.SetComplete(a.Complete)
	if a.LogFile != "" {
		t.FollowFile(a.LogFile)
	}
	return t
}

// stage notes the trail cluster name has before the build in progress
// first changes it.
func (a *auditTrails) stage(name string) {
	if _, staged := a.before[name]; staged {
		return
	}
	if a.before == nil {
		a.before = map[string]*auditTrail{}
	}
	var prev *auditTrail
	if kept, ok := a.byCluster[name]; ok {
		prev = &kept
	}
	a.before[name] = prev
}

// prune drops the trails of clusters cfg no longer audits (closed when
// the build settles).
func (a *auditTrails) prune(cfg *config.Config) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for name := range a.byCluster {
		if c := cfg.Cluster(name); c == nil || c.Audit == nil {
			a.stage(name)
			delete(a.byCluster, name)
		}
	}
}

// settle ends a build. Built (its generation is taking over): the trails
// it replaced or dropped are closed, and every trail counts the replicas
// that share the webhook's posts with replicas. Not built: the trails it
// made are closed and the running generation's are back, as they were.
func (a *auditTrails) settle(built bool, replicas func() int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for name, prev := range a.before {
		cur, ok := a.byCluster[name]
		same := ok && prev != nil && cur.trail == prev.trail
		switch {
		case same:
		case built && prev != nil:
			prev.trail.Close()
		case !built:
			if ok {
				cur.trail.Close()
			}
			delete(a.byCluster, name)
			if prev != nil {
				a.byCluster[name] = *prev
			}
		}
	}
	clear(a.before)
	if built {
		for _, kept := range a.byCluster {
			kept.trail.SetReplicas(replicas)
		}
	}
}

// attribute gives a target its cluster's audit trail and the GitHub
// accounts of that cluster's users.
func (a *auditTrails) attribute(t *bot.Target, c *config.Cluster) {
	t.Audit = a.of(c)
	if t.Audit == nil || len(c.Audit.GitHubUsers) == 0 {
		return
	}
	t.CoAuthors = map[string]string{}
	for _, u := range c.Audit.GitHubUsers {
		t.CoAuthors[u.User] = u.Login
	}
}

// handlers are the audit webhook receivers of cfg's clusters that take
// one, by path: /audit/CLUSTER, each checking its cluster's token.
func (a *auditTrails) handlers(cfg *config.Config, log *slog.Logger) map[string]http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	out := map[string]http.Handler{}
	for i := range cfg.Clusters {
		c := &cfg.Clusters[i]
		if c.Audit == nil || c.Audit.WebhookTokenFile == "" {
			continue
		}
		path := c.Audit.WebhookTokenFile
		out["/audit/"+c.Name] = a.of(c).Handler(func() (string, error) { return readToken(path) }, log.With("cluster", c.Name))
	}
	return out
}

// readToken reads a token file, trimmed; an empty one is an error, so an
// empty file never lets an empty token in.
func readToken(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return tok, nil
}
