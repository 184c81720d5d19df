package githubtest

import (
	"fmt"
	"strings"
)

// The deliveries of an installation's and a repository's life: GitHub
// sends installation and installation_repositories to every App, and
// repository to Apps subscribed to it (metadata permission).

// InstallationEvent is the installation delivery for installationID
// (action "suspend", "unsuspend", "new_permissions_accepted", ...), sent
// by sender. Call it after the change it reports (SuspendInstallation).
func (s *Server) InstallationEvent(installationID int64, action, sender string) Webhook {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.installs[installationID]
	if in == nil {
		panic(fmt.Sprintf("githubtest: no installation %d", installationID))
	}
	return s.deliveryLocked("installation", map[string]any{"action": action, "installation": s.installationJSON(in), "sender": s.loginJSON(sender)})
}

// InstallationRepositoriesEvent is the installation_repositories delivery
// for repositories added to ("added") or removed from ("removed") what
// installationID may reach, named owner/name.
func (s *Server) InstallationRepositoriesEvent(installationID int64, action, sender string, repos ...string) Webhook {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.installs[installationID]
	if in == nil {
		panic(fmt.Sprintf("githubtest: no installation %d", installationID))
	}
	list := []any{}
	for _, full := range repos {
		owner, name, _ := strings.Cut(full, "/")
		rp := s.mustRepoLocked(owner, name)
		list = append(list, map[string]any{"id": rp.id, "node_id": nodeID("R", rp.id), "name": rp.name,
			"full_name": rp.owner + "/" + rp.name, "private": true}) // every test repository is private
	}
	added, removed := list, []any{}
	if action == "removed" {
		added, removed = []any{}, list
	}
	return s.deliveryLocked("installation_repositories", map[string]any{
		"action": action, "installation": s.installationJSON(in), "repository_selection": in.selection(),
		"repositories_added": added, "repositories_removed": removed,
		"requester": nil, "sender": s.loginJSON(sender)})
}

// RepositoryEvent is the repository delivery for owner/name as it is now
// (action "renamed", "transferred", "archived", "unarchived", ...), sent
// by sender. from is what a rename or transfer changed: the old name for
// "renamed", the old owner's login for "transferred"; "" otherwise.
func (s *Server) RepositoryEvent(owner, name, action, from, sender string) Webhook {
	s.mu.Lock()
	defer s.mu.Unlock()
	rp := s.mustRepoLocked(owner, name)
	body := map[string]any{"action": action}
	switch action {
	case "renamed":
		body["changes"] = map[string]any{"repository": map[string]any{"name": map[string]any{"from": from}}}
	case "transferred":
		old := s.userLocked(from, "")
		side := "user"
		if old.typ == "Organization" {
			side = "organization"
		}
		body["changes"] = map[string]any{"owner": map[string]any{"from": map[string]any{side: s.userJSON(old)}}}
	}
	return s.webhookLocked(rp, "repository", body, sender)
}
