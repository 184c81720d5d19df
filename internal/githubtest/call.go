package githubtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// call is one request being handled, under the server lock.
type call struct {
	s      *Server
	r      *http.Request
	params map[string]string
	body   []byte
	rt     *route
	tok    *token
	app    *app
	inst   *installation
	repo   *repo
	// concurrent is how many requests of the token's installation were in
	// flight when this one arrived, itself included.
	concurrent int
}

func (c *call) dispatch() *reply {
	s := c.s
	switch c.rt.auth {
	case authJWT:
		a, rep := s.verifyJWT(c.r)
		if rep != nil {
			return rep
		}
		c.app = a
	case authToken:
		t := s.tokens[bearer(c.r)]
		if t == nil || !s.opts.Clock().Before(t.expires) {
			return errReply(http.StatusUnauthorized, "Bad credentials")
		}
		c.tok = t
		c.inst = s.installs[t.installation]
		if c.inst == nil {
			return errReply(http.StatusUnauthorized, "Bad credentials")
		}
		c.app = s.apps[c.inst.app]
		if c.inst.suspended != nil {
			return errReply(http.StatusForbidden, suspendedMessage)
		}
	}
	if owner, ok := c.params["owner"]; ok && c.rt.auth != authDownload {
		rp := s.repoLocked(owner, c.params["repo"])
		if moved := s.renamed[key(owner, c.params["repo"])]; rp == nil && moved != nil {
			return s.redirectReply(c.r, owner, c.params["repo"], moved)
		}
		// An installation sees only its owner's repositories (those
		// selected, when it has a selection); others are 404, as on GitHub.
		if rp == nil || (c.inst != nil && !c.inst.reaches(rp)) {
			return errReply(http.StatusNotFound, "Not Found")
		}
		c.repo = rp
	}
	if b := s.bucketFor(c); b != nil && b.used >= b.limit {
		who := "app"
		if c.tok != nil {
			who = fmt.Sprintf("installation ID %d", c.tok.installation)
		}
		return jsonReply(http.StatusForbidden, map[string]any{"message": "API rate limit exceeded for " + who + ".",
			"documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-primary-rate-limits"})
	}
	if rep := c.permitted(); rep != nil {
		return rep
	}
	if c.repo != nil && c.repo.archived && (Request{Method: c.r.Method}).Mutating() {
		return errReply(http.StatusForbidden, "Repository was archived so is read-only.")
	}
	if c.tok != nil && c.concurrent > maxConcurrent {
		return s.secondaryRefusal()
	}
	if rep := s.pointLimit(c); rep != nil {
		return rep
	}
	if rep := s.contentLimit(c); rep != nil {
		return rep
	}
	return c.rt.h(c)
}

func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	for _, p := range []string{"token ", "Token ", "bearer ", "Bearer "} {
		if strings.HasPrefix(h, p) {
			return strings.TrimSpace(h[len(p):])
		}
	}
	return ""
}

func (c *call) botUser() *user {
	if c.app != nil {
		return c.s.userLocked(c.app.slug+"[bot]", "Bot")
	}
	return c.s.userLocked("githubtest", "")
}

func (c *call) actor() string { return c.botUser().login }

// decode reads the JSON request body into v; an empty body leaves v as it
// is, a malformed one gets GitHub's 400.
func (c *call) decode(v any) *reply {
	if len(bytes.TrimSpace(c.body)) == 0 {
		return nil
	}
	if err := json.Unmarshal(c.body, v); err != nil {
		return errReply(400, "Problems parsing JSON")
	}
	return nil
}

// page cuts a list per GitHub's per_page/page and sets the Link header.
func (c *call) page(n int) (lo, hi int, link string) {
	q := c.r.URL.Query()
	per, _ := strconv.Atoi(q.Get("per_page"))
	if per <= 0 {
		per = 30
	}
	if per > 100 {
		per = 100
	}
	pg, _ := strconv.Atoi(q.Get("page"))
	if pg <= 0 {
		pg = 1
	}
	lo = min((pg-1)*per, n)
	hi = min(lo+per, n)
	last := max((n+per-1)/per, 1)
	mk := func(p int, rel string) string {
		q2 := c.r.URL.Query()
		q2.Set("page", strconv.Itoa(p))
		q2.Set("per_page", strconv.Itoa(per))
		return fmt.Sprintf(`<%s%s?%s>; rel="%s"`, c.s.URL(), c.r.URL.EscapedPath(), q2.Encode(), rel)
	}
	var parts []string
	if pg < last {
		parts = append(parts, mk(pg+1, "next"), mk(last, "last"))
	}
	if pg > 1 {
		parts = append(parts, mk(1, "first"), mk(pg-1, "prev"))
	}
	return lo, hi, strings.Join(parts, ", ")
}

func (c *call) paged(items []any) *reply {
	lo, hi, link := c.page(len(items))
	rep := jsonReply(http.StatusOK, items[lo:hi])
	if link != "" {
		rep.header.Set("Link", link)
	}
	return rep
}

// redirectReply answers a request to a moved repository's old name as
// GitHub does: 301 for a read, 307 (the method kept) for a write, to the
// same path under /repositories/{id}, which names no owner.
func (s *Server) redirectReply(r *http.Request, owner, old string, rp *repo) *reply {
	status := http.StatusMovedPermanently
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		status = http.StatusTemporaryRedirect
	}
	rest := strings.TrimPrefix(r.URL.EscapedPath(), "/repos/"+owner+"/"+old)
	loc := fmt.Sprintf("%s/repositories/%d%s", s.URL(), rp.id, rest)
	if r.URL.RawQuery != "" {
		loc += "?" + r.URL.RawQuery
	}
	rep := jsonReply(status, map[string]any{"message": "Moved Permanently", "url": loc, "documentation_url": docsURL})
	rep.header.Set("Location", loc)
	return rep
}

// byID rewrites a request under /repositories/{id} (where GitHub's
// redirects point) to the repository's /repos/{owner}/{repo} path, which
// the routes and GitHub's description know. It returns the path as it
// arrived.
func (s *Server) byID(r *http.Request) string {
	arrived := r.URL.EscapedPath()
	rest, ok := strings.CutPrefix(arrived, "/repositories/")
	if !ok {
		return arrived
	}
	idPart, tail, _ := strings.Cut(rest, "/")
	id, err := strconv.ParseInt(idPart, 10, 64)
	if err != nil {
		return arrived
	}
	s.mu.Lock()
	var found *repo
	for _, rp := range s.repos {
		if rp.id == id {
			found = rp
		}
	}
	s.mu.Unlock()
	if found == nil {
		return arrived
	}
	escaped := "/repos/" + url.PathEscape(found.owner) + "/" + url.PathEscape(found.name)
	if tail != "" {
		escaped += "/" + tail
	}
	if p, err := url.PathUnescape(escaped); err == nil {
		r.URL.Path, r.URL.RawPath = p, escaped
	}
	return arrived
}
