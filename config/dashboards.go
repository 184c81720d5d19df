package config

import "strings"

// checkDashboards checks each dashboard repository as a target's repo
// (owner/name, of github.owner) and refuses one listed twice, in any case.
func (d *decoder) checkDashboards(c *Config) {
	if d.isBad("dashboards") {
		return
	}
	seen := map[string]int{}
	for i, repo := range c.Dashboards {
		ip := indexPath("dashboards", i)
		if d.isBad(ip) {
			continue
		}
		d.checkTargetRepo(ip, repo, c.GitHub.Owner)
		k := strings.ToLower(repo)
		if first, dup := seen[k]; dup {
			d.fail(ip, "%q is listed twice (first at line %d); a repository has one dashboard", repo, d.line(indexPath("dashboards", first)))
			continue
		}
		seen[k] = i
		if !anyDiscovers(c) && !d.anyTargetOf(c, repo) {
			d.fail(ip, "no target is on %s and no cluster discovers targets: a dashboard would have no rows; check the spelling or remove it", repo)
		}
	}
}

func anyDiscovers(c *Config) bool {
	for _, cl := range c.Clusters {
		if cl.Discover != nil {
			return true
		}
	}
	return false
}

// anyTargetOf reports a listed target on repo (any case).
func (d *decoder) anyTargetOf(c *Config, repo string) bool {
	for _, t := range c.Targets {
		if strings.EqualFold(t.Repo, repo) {
			return true
		}
	}
	return false
}
