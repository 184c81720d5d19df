package githubtest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/hex"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v4"
)

// RegisterApp makes appID a GitHub App whose JWTs are signed by the key
// behind pub. Its bot user is "app<ID>[bot]" unless SetAppSlug renames it.
func (s *Server) RegisterApp(appID int64, pub *rsa.PublicKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	slug := fmt.Sprintf("app%d", appID)
	s.apps[appID] = &app{id: appID, slug: slug, pub: pub, created: s.now(), perms: defaultPermissions(),
		events: []string{"check_run", "pull_request", "push"}}
	s.userLocked(slug+"[bot]", "Bot")
}

// SetAppPermissions replaces what an app (and so each of its installations)
// may do: permission name to "read" or "write". Requests beyond them are
// refused as GitHub refuses them.
func (s *Server) SetAppPermissions(appID int64, perms map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.apps[appID]; a != nil {
		a.perms = map[string]string{}
		for k, v := range perms {
			a.perms[k] = v
		}
	}
}

// defaultPermissions are the ones DESIGN §12 asked for before team
// reviewers needed members: read.
func defaultPermissions() map[string]string {
	return map[string]string{"contents": "write", "pull_requests": "write", "checks": "write", "metadata": "read"}
}

func permsJSON(perms map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range perms {
		out[k] = v
	}
	return out
}

// notAccessible is GitHub's answer to an installation lacking a permission.
func notAccessible() *reply {
	return errReply(http.StatusForbidden, "Resource not accessible by integration")
}

// SetAppSlug renames an app; its bot becomes "<slug>[bot]".
func (s *Server) SetAppSlug(appID int64, slug string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.apps[appID]; a != nil {
		a.slug = slug
		s.userLocked(slug+"[bot]", "Bot")
	}
}

// AddInstallation installs the app on every repository of owner.
func (s *Server) AddInstallation(appID, installationID int64, owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.userLocked(owner, "Organization")
	s.installs[installationID] = &installation{id: installationID, app: appID, owner: owner, created: s.now()}
}

// suspendedMessage is GitHub's 403 for every request of a suspended
// installation, the token request included.
const suspendedMessage = "This installation has been suspended"

// SelectRepositories limits an installation to the repositories named
// (owner/name), as its owner's "Only select repositories" does; with none
// named it reaches all of its owner's repositories again. A repository
// outside the selection answers 404 to the installation, as on GitHub.
func (s *Server) SelectRepositories(installationID int64, repos ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	in := s.installs[installationID]
	if in == nil {
		panic(fmt.Sprintf("githubtest: no installation %d", installationID))
	}
	in.selected = nil
	if len(repos) == 0 {
		return
	}
	in.selected = map[int64]bool{}
	for _, full := range repos {
		owner, name, _ := strings.Cut(full, "/")
		rp := s.mustRepoLocked(owner, name)
		in.selected[rp.id] = true
	}
}

// SuspendInstallation suspends an installation (its owner's "Suspend" in
// the settings) or, with suspended false, lifts the suspension. A suspended
// installation gets no tokens and its tokens do nothing.
func (s *Server) SuspendInstallation(installationID int64, suspended bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if in := s.installs[installationID]; in != nil {
		in.suspended = nil
		if suspended {
			at := s.now()
			in.suspended = &at
		}
	}
}

// Token issues an installation token without HTTP, for tests that do not
// exercise the app flow.
func (s *Server) Token(installationID int64) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.issueToken(installationID).value
}

func (s *Server) issueToken(installationID int64) *token {
	t := &token{value: randomToken("ghs_"), installation: installationID, expires: s.opts.Clock().Add(s.opts.TokenLifetime)}
	s.tokens[t.value] = t
	return t
}

// ExpireTokens makes every installation token issued so far expired.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	defer s.mu.Unlock()
	past := s.opts.Clock().Add(-time.Second)
	for _, t := range s.tokens {
		t.expires = past
	}
}

func randomToken(prefix string) string {
	var b [18]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return prefix + hex.EncodeToString(b[:])
}

// verifyJWT checks an app JWT as GitHub does: RS256 by the app's key,
// iss the app id, exp no more than ten minutes ahead.
func (s *Server) verifyJWT(r *http.Request) (*app, *reply) {
	raw := bearer(r)
	if raw == "" {
		return nil, errReply(http.StatusUnauthorized, "A JSON web token could not be decoded")
	}
	claims := jwt.MapClaims{}
	var found *app
	_, err := jwt.NewParser(jwt.WithoutClaimsValidation(), jwt.WithValidMethods([]string{"RS256"})).
		ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) {
			var id int64
			switch iss := claims["iss"].(type) {
			case string:
				id, _ = strconv.ParseInt(iss, 10, 64)
			case float64:
				id = int64(iss)
			}
			found = s.apps[id]
			if found == nil {
				return nil, fmt.Errorf("unknown app")
			}
			return found.pub, nil
		})
	if err != nil || found == nil {
		return nil, errReply(http.StatusUnauthorized, "A JSON web token could not be decoded")
	}
	now := s.opts.Clock()
	exp, ok := claims["exp"].(float64)
	if !ok {
		return nil, errReply(http.StatusUnauthorized, "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires.")
	}
	switch {
	case time.Unix(int64(exp), 0).Before(now):
		return nil, errReply(http.StatusUnauthorized, "'Expiration time' claim ('exp') is too far in the past")
	case time.Unix(int64(exp), 0).After(now.Add(10 * time.Minute)):
		// GitHub allows no slack here: a client whose clock runs ahead and
		// signs exp at the ten-minute edge is refused.
		return nil, errReply(http.StatusUnauthorized, "'Expiration time' claim ('exp') is too far in the future")
	}
	if iat, ok := claims["iat"].(float64); ok && time.Unix(int64(iat), 0).After(now) {
		return nil, errReply(http.StatusUnauthorized, "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued.")
	}
	return found, nil
}

// getApp is the App the JWT speaks for.
func (c *call) getApp() *reply {
	return jsonReply(http.StatusOK, c.s.appJSON(c.app))
}

func (c *call) listInstallations() *reply {
	var ids []int64
	for id, in := range c.s.installs {
		if in.app == c.app.id {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := []any{}
	for _, id := range ids {
		out = append(out, c.s.installationJSON(c.s.installs[id]))
	}
	return jsonReply(http.StatusOK, out)
}

func (c *call) createToken() *reply {
	id, _ := strconv.ParseInt(c.params["installation_id"], 10, 64)
	in := c.s.installs[id]
	if in == nil || in.app != c.app.id {
		return errReply(http.StatusNotFound, "Not Found")
	}
	if in.suspended != nil {
		return errReply(http.StatusForbidden, suspendedMessage)
	}
	t := c.s.issueToken(id)
	return jsonReply(http.StatusCreated, map[string]any{"token": t.value, "expires_at": ts(t.expires),
		"permissions": permsJSON(c.app.perms), "repository_selection": in.selection()})
}

func (c *call) repoInstallation() *reply {
	for _, in := range c.s.installs {
		if in.app == c.app.id && in.reaches(c.repo) {
			return jsonReply(http.StatusOK, c.s.installationJSON(in))
		}
	}
	return errReply(http.StatusNotFound, "Not Found")
}

func (s *Server) appJSON(a *app) map[string]any {
	ownerLogin := a.owner
	if ownerLogin == "" {
		ownerLogin = a.slug + "-owner"
	}
	owner := s.loginJSON(ownerLogin)
	return map[string]any{
		"id": a.id, "slug": a.slug, "node_id": nodeID("A", a.id), "owner": owner, "name": a.slug, "description": nil,
		"external_url": s.URL() + "/apps/" + a.slug, "html_url": s.URL() + "/apps/" + a.slug,
		"created_at": ts(a.created), "updated_at": ts(a.created),
		"permissions": permsJSON(a.perms), "events": append([]string{}, a.events...),
	}
}

func (s *Server) installationJSON(in *installation) map[string]any {
	a := s.apps[in.app]
	slug, perms, events := "", map[string]string{}, []string{}
	if a != nil {
		slug, perms, events = a.slug, a.perms, append(events, a.events...)
	}
	owner := s.userLocked(in.owner, "")
	var suspendedBy, suspendedAt any
	if in.suspended != nil {
		suspendedBy, suspendedAt = s.userJSON(owner), ts(*in.suspended)
	}
	return map[string]any{
		"id": in.id, "app_id": in.app, "app_slug": slug, "target_id": owner.id, "target_type": owner.typ,
		"account": s.userJSON(owner), "repository_selection": in.selection(),
		"access_tokens_url": s.URL() + fmt.Sprintf("/app/installations/%d/access_tokens", in.id),
		"repositories_url":  s.URL() + "/installation/repositories",
		"html_url":          s.URL() + fmt.Sprintf("/organizations/%s/settings/installations/%d", in.owner, in.id),
		"permissions":       permsJSON(perms), "events": events,
		"created_at": ts(in.created), "updated_at": ts(in.created),
		"single_file_name": nil, "suspended_by": suspendedBy, "suspended_at": suspendedAt,
		"has_multiple_single_files": false, "single_file_paths": []any{},
	}
}
