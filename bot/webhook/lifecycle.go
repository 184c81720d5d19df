package webhook

import (
	"strings"

	"github.com/driftback/driftback/config"
)

// The life of the installation and its repositories. GitHub sends
// installation and installation_repositories deliveries to every App, and
// repository deliveries to those subscribed (app.yaml). They say that the
// App can work again where it could not (the installation unsuspended,
// new permissions accepted, a repository added to it or unarchived), or
// that a repository moved (renamed, transferred): the targets concerned
// are polled at once, past the backoff their failing polls earned, rather
// than up to maxSkip polls later. The rest the polls learn as always,
// webhooks or not: a suspended installation's 403 (nothing is written), an
// archived repository's refused write, a moved repository's redirect,
// which the poll follows to the current name (bot/ghround).

// lifecycleEvents are the events whose deliveries concern targets by
// installation or by repository name change rather than by repository.
var lifecycleEvents = map[string]bool{"installation": true, "installation_repositories": true, "repository": true}

// lifecyclePayload is the part of those deliveries the bot reads.
type lifecyclePayload struct {
	Installation struct {
		Account struct {
			Login string `json:"login"`
		} `json:"account"`
	} `json:"installation"`
	RepositoriesAdded []struct {
		FullName string `json:"full_name"`
	} `json:"repositories_added"`
	Changes struct {
		Repository struct {
			Name struct {
				From string `json:"from"`
			} `json:"name"`
		} `json:"repository"`
		Owner struct {
			From struct {
				User *struct {
					Login string `json:"login"`
				} `json:"user"`
				Organization *struct {
					Login string `json:"login"`
				} `json:"organization"`
			} `json:"from"`
		} `json:"owner"`
	} `json:"changes"`
}

// lifecycle says whether a lifecycle delivery concerns target tc.
func (rc *Receiver) lifecycle(env Env, event string, p *hookPayload, tc *config.Target) bool {
	switch event {
	case "installation":
		// An App may be installed on several accounts; the delivery names
		// the one whose installation changed.
		return (p.Action == "unsuspend" || p.Action == "new_permissions_accepted") &&
			strings.EqualFold(p.Installation.Account.Login, tc.Owner())
	case "installation_repositories":
		for _, added := range p.RepositoriesAdded {
			if p.Action == "added" && rc.ofRepository(env, added.FullName, tc) {
				return true
			}
		}
	case "repository":
		switch p.Action {
		case "unarchived":
			return rc.ofRepository(env, p.Repository.FullName, tc)
		case "renamed", "transferred":
			// The config names the repository as it was.
			owner, name, _ := strings.Cut(p.Repository.FullName, "/")
			if from := p.Changes.Repository.Name.From; from != "" {
				name = from
			}
			if from := p.Changes.Owner.From; from.User != nil {
				owner = from.User.Login
			} else if from.Organization != nil {
				owner = from.Organization.Login
			}
			if !rc.ofRepository(env, owner+"/"+name, tc) && !rc.ofRepository(env, p.Repository.FullName, tc) {
				return false
			}
			// Deliveries under the new name reach the target on this
			// replica from now on; its holder's poll follows the move too.
			rc.mu.Lock()
			if rc.aliases == nil {
				rc.aliases = map[string]string{}
			}
			rc.aliases[tc.Name] = p.Repository.FullName
			rc.mu.Unlock()
			return true
		}
	}
	return false
}

// ofRepository reports whether full (owner/name, any case) is target tc's
// repository: as its config names it, where this replica's poll found it
// moved to, or the name a rename delivery to this replica gave it. (A
// replica that neither polls the target nor got the rename matches only
// the configured name until the config is updated.)
func (rc *Receiver) ofRepository(env Env, full string, tc *config.Target) bool {
	if strings.EqualFold(full, tc.Owner()+"/"+tc.RepoName()) {
		return true
	}
	rc.mu.Lock()
	alias := rc.aliases[tc.Name]
	rc.mu.Unlock()
	if alias != "" && strings.EqualFold(full, alias) {
		return true
	}
	m, ok := env.Moved(tc.Name)
	return ok && strings.EqualFold(m.Configured, tc.Repo) && strings.EqualFold(full, m.Current)
}
