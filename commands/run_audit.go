package commands

import (
	"fmt"
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
// read again.
type auditTrails struct {
	mu        sync.Mutex
	byCluster map[string]auditTrail
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
	if ok {
		kept.trail.Close()
	}
	t := cluster.NewAuditTrail(int(c.Audit.Keep))
	if c.Audit.LogFile != "" {
		t.FollowFile(c.Audit.LogFile)
	}
	if a.byCluster == nil {
		a.byCluster = map[string]auditTrail{}
	}
	a.byCluster[c.Name] = auditTrail{cfg: *c.Audit, trail: t}
	return t
}

// prune drops (and closes) the trails of clusters cfg no longer audits.
func (a *auditTrails) prune(cfg *config.Config) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for name, kept := range a.byCluster {
		if c := cfg.Cluster(name); c == nil || c.Audit == nil {
			kept.trail.Close()
			delete(a.byCluster, name)
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
func (a *auditTrails) handlers(cfg *config.Config) map[string]http.Handler {
	out := map[string]http.Handler{}
	for i := range cfg.Clusters {
		c := &cfg.Clusters[i]
		if c.Audit == nil || c.Audit.WebhookTokenFile == "" {
			continue
		}
		path := c.Audit.WebhookTokenFile
		out["/audit/"+c.Name] = a.of(c).Handler(func() (string, error) { return readToken(path) })
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
