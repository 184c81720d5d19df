package githubtest

import (
	"fmt"
	"net/url"
	"strings"
)

func (s *Server) userLocked(login, typ string) *user {
	k := strings.ToLower(login)
	if u := s.users[k]; u != nil {
		return u
	}
	if typ == "" {
		typ = "User"
		if strings.HasSuffix(login, "[bot]") {
			typ = "Bot"
		}
	}
	u := &user{login: login, id: s.id(), typ: typ}
	s.users[k] = u
	return u
}

// email is GitHub's no-reply address for a login; commits carrying it are
// attributed to that user.
func (u *user) email() string {
	if u.mail != "" {
		return u.mail
	}
	return fmt.Sprintf("%d+%s@users.noreply.github.com", u.id, u.login)
}

func (s *Server) userByEmail(email string) *user {
	for _, u := range s.users {
		if strings.EqualFold(u.email(), email) {
			return u
		}
	}
	return nil
}

func (s *Server) userJSON(u *user) map[string]any {
	api := s.URL() + "/users/" + url.PathEscape(u.login)
	return map[string]any{
		"login": u.login, "id": u.id, "node_id": nodeID("U", u.id), "type": u.typ, "site_admin": false,
		"avatar_url": s.URL() + "/avatars/u/" + fmt.Sprint(u.id), "gravatar_id": "",
		"url": api, "html_url": s.URL() + "/" + url.PathEscape(u.login),
		"followers_url": api + "/followers", "following_url": api + "/following{/other_user}",
		"gists_url": api + "/gists{/gist_id}", "starred_url": api + "/starred{/owner}{/repo}",
		"subscriptions_url": api + "/subscriptions", "organizations_url": api + "/orgs",
		"repos_url": api + "/repos", "events_url": api + "/events{/privacy}",
		"received_events_url": api + "/received_events",
	}
}

func (s *Server) loginJSON(login string) map[string]any { return s.userJSON(s.userLocked(login, "")) }
