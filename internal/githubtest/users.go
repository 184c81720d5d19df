package githubtest

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
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

// userSince is when every test account was made.
var userSince = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)

// getUser is GET /users/{username}: an account the server knows, as its
// public profile; 404 for any other login, as GitHub answers.
func (c *call) getUser() *reply {
	u := c.s.users[strings.ToLower(c.params["username"])]
	if u == nil {
		return errReply(http.StatusNotFound, "Not Found")
	}
	j := c.s.userJSON(u)
	for k, v := range map[string]any{
		"name": nil, "company": nil, "blog": "", "location": nil, "email": nil, "hireable": nil, "bio": nil,
		"public_repos": 0, "public_gists": 0, "followers": 0, "following": 0, "user_view_type": "public",
		"created_at": ts(userSince), "updated_at": ts(userSince),
	} {
		j[k] = v
	}
	return jsonReply(http.StatusOK, j)
}
