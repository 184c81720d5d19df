package githubtest

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/golang-jwt/jwt/v4"
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
	}
	if owner, ok := c.params["owner"]; ok && c.rt.auth != authDownload {
		rp := s.repoLocked(owner, c.params["repo"])
		// An installation sees only its owner's repositories; others are 404, as on GitHub.
		if rp == nil || (c.inst != nil && !strings.EqualFold(c.inst.owner, rp.owner)) {
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
	case time.Unix(int64(exp), 0).After(now.Add(10*time.Minute + 30*time.Second)):
		// 30s of slack for clock drift, as GitHub allows some.
		return nil, errReply(http.StatusUnauthorized, "'Expiration time' claim ('exp') is too far in the future")
	}
	if iat, ok := claims["iat"].(float64); ok && time.Unix(int64(iat), 0).After(now.Add(time.Minute)) {
		return nil, errReply(http.StatusUnauthorized, "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued.")
	}
	return found, nil
}

// ---- apps ----

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
	t := c.s.issueToken(id)
	return jsonReply(http.StatusCreated, map[string]any{"token": t.value, "expires_at": ts(t.expires),
		"permissions": appPermissions, "repository_selection": "all"})
}

func (c *call) repoInstallation() *reply {
	for _, in := range c.s.installs {
		if in.app == c.app.id && strings.EqualFold(in.owner, c.repo.owner) {
			return jsonReply(http.StatusOK, c.s.installationJSON(in))
		}
	}
	return errReply(http.StatusNotFound, "Not Found")
}

// ---- repository and git data ----

func (c *call) getRepo() *reply {
	m := c.s.repoJSON(c.repo)
	m["permissions"] = map[string]any{"admin": false, "maintain": false, "push": true, "triage": false, "pull": true}
	return jsonReply(http.StatusOK, m)
}

func (c *call) createBlob() *reply {
	var in struct {
		Content  *string `json:"content"`
		Encoding string  `json:"encoding"`
	}
	if rep := c.decode(&in); rep != nil {
		return rep
	}
	if in.Content == nil {
		return validationReply("Blob", "content", "missing_field", "")
	}
	data := []byte(*in.Content)
	switch in.Encoding {
	case "", "utf-8":
	case "base64":
		b, err := base64.StdEncoding.DecodeString(*in.Content)
		if err != nil {
			return errReply(422, "Invalid Base64 content")
		}
		data = b
	default:
		return errReply(422, "encoding must be utf-8 or base64")
	}
	h := c.repo.git.putBlob(data)
	return jsonReply(http.StatusCreated, map[string]any{"sha": h.String(), "url": c.s.repoAPI(c.repo) + "/git/blobs/" + h.String()})
}

func (c *call) getBlob() *reply {
	sha := c.params["file_sha"]
	if !plumbing.IsHash(sha) {
		return errReply(http.StatusNotFound, "Not Found")
	}
	data, ok := c.repo.git.blob(plumbing.NewHash(sha))
	if !ok {
		return errReply(http.StatusNotFound, "Not Found")
	}
	return jsonReply(http.StatusOK, map[string]any{"sha": sha, "node_id": "B_" + sha, "size": len(data),
		"url": c.s.repoAPI(c.repo) + "/git/blobs/" + sha, "content": base64.StdEncoding.EncodeToString(data), "encoding": "base64"})
}

func (c *call) createTree() *reply {
	var in struct {
		BaseTree string `json:"base_tree"`
		Tree     []struct {
			Path    string  `json:"path"`
			Mode    string  `json:"mode"`
			Type    string  `json:"type"`
			SHA     *string `json:"sha"`
			Content *string `json:"content"`
		} `json:"tree"`
	}
	if rep := c.decode(&in); rep != nil {
		return rep
	}
	g := c.repo.git
	var base plumbing.Hash
	if in.BaseTree != "" {
		if !plumbing.IsHash(in.BaseTree) || !g.has(plumbing.TreeObject, plumbing.NewHash(in.BaseTree)) {
			return errReply(422, "Invalid tree info")
		}
		base = plumbing.NewHash(in.BaseTree)
	}
	root, err := g.openDir(base)
	if err != nil {
		return errReply(422, "Invalid tree info")
	}
	for _, e := range in.Tree {
		if e.SHA != nil && e.Content != nil {
			return errReply(422, "Must supply either tree.sha or tree.content, not both")
		}
		mode, err := filemode.New(e.Mode)
		if err != nil || e.Mode == "" {
			return errReply(422, fmt.Sprintf("tree.mode %q is not valid", e.Mode))
		}
		var node *treeNode
		switch {
		case e.Content != nil:
			node = &treeNode{mode: mode, hash: g.putBlob([]byte(*e.Content))}
		case e.SHA != nil:
			if !plumbing.IsHash(*e.SHA) {
				return errReply(422, fmt.Sprintf("tree.sha %s is not a valid %s", *e.SHA, e.Type))
			}
			h := plumbing.NewHash(*e.SHA)
			want := map[string]plumbing.ObjectType{"blob": plumbing.BlobObject, "tree": plumbing.TreeObject}[e.Type]
			if e.Type != "commit" && (want == plumbing.InvalidObject || !g.has(want, h)) {
				return errReply(422, fmt.Sprintf("tree.sha %s is not a valid %s", *e.SHA, e.Type))
			}
			node = &treeNode{mode: mode, hash: h}
		}
		// sha null (no content) deletes the path from the base tree.
		if err := g.set(root, e.Path, node, node == nil); err != nil {
			return errReply(422, "tree.path "+err.Error())
		}
	}
	h, _ := g.write(root)
	rep := c.treeReply(h, false, http.StatusCreated)
	rep.header.Set("Location", c.s.repoAPI(c.repo)+"/git/trees/"+h.String())
	return rep
}

func (c *call) treeReply(h plumbing.Hash, recursive bool, status int) *reply {
	g := c.repo.git
	api := c.s.repoAPI(c.repo)
	entries := []any{}
	var walk func(prefix string, h plumbing.Hash) error
	walk = func(prefix string, h plumbing.Hash) error {
		t, err := g.tree(h)
		if err != nil {
			return err
		}
		for _, e := range t.Entries {
			p := prefix + e.Name
			m := map[string]any{"path": p, "mode": modeString(e.Mode), "type": typeOfMode(e.Mode), "sha": e.Hash.String()}
			switch e.Mode {
			case filemode.Dir:
				m["url"] = api + "/git/trees/" + e.Hash.String()
			case filemode.Submodule:
			default:
				data, _ := g.blob(e.Hash)
				m["size"] = len(data)
				m["url"] = api + "/git/blobs/" + e.Hash.String()
			}
			entries = append(entries, m)
			if recursive && e.Mode == filemode.Dir {
				if err := walk(p+"/", e.Hash); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk("", h); err != nil {
		return errReply(http.StatusNotFound, "Not Found")
	}
	return jsonReply(status, map[string]any{"sha": h.String(), "url": api + "/git/trees/" + h.String(), "tree": entries, "truncated": false})
}

func (c *call) getTree() *reply {
	g := c.repo.git
	rev := c.params["tree_sha"]
	var h plumbing.Hash
	switch {
	case plumbing.IsHash(rev) && g.has(plumbing.TreeObject, plumbing.NewHash(rev)):
		h = plumbing.NewHash(rev)
	default:
		// GitHub takes any tree-ish: a commit or branch names its tree.
		ch, ok := g.resolve(rev)
		if !ok {
			return errReply(http.StatusNotFound, "Not Found")
		}
		cm, err := g.commit(ch)
		if err != nil {
			return errReply(http.StatusNotFound, "Not Found")
		}
		h = cm.TreeHash
	}
	rec := c.r.URL.Query().Get("recursive")
	return c.treeReply(h, rec != "" && rec != "0" && rec != "false", http.StatusOK)
}

type gitPerson struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Date  string `json:"date"`
}

func (c *call) botUser() *user {
	if c.app != nil {
		return c.s.userLocked(c.app.slug+"[bot]", "Bot")
	}
	return c.s.userLocked("githubtest", "")
}

func (c *call) createCommit() *reply {
	var in struct {
		Message   *string    `json:"message"`
		Tree      string     `json:"tree"`
		Parents   []string   `json:"parents"`
		Author    *gitPerson `json:"author"`
		Committer *gitPerson `json:"committer"`
	}
	if rep := c.decode(&in); rep != nil {
		return rep
	}
	g := c.repo.git
	if in.Message == nil {
		return validationReply("Commit", "message", "missing_field", "")
	}
	if !plumbing.IsHash(in.Tree) || !g.has(plumbing.TreeObject, plumbing.NewHash(in.Tree)) {
		return errReply(422, "Tree SHA does not exist")
	}
	var parents []plumbing.Hash
	for _, p := range in.Parents {
		if !plumbing.IsHash(p) || !g.has(plumbing.CommitObject, plumbing.NewHash(p)) {
			return errReply(422, "Parent SHA does not exist or is not a commit object")
		}
		parents = append(parents, plumbing.NewHash(p))
	}
	now := c.s.now()
	bot := c.botUser()
	person := func(p *gitPerson, def object.Signature) (object.Signature, *reply) {
		if p == nil {
			return def, nil
		}
		when := now
		if p.Date != "" {
			t, err := time.Parse(time.RFC3339, p.Date)
			if err != nil {
				return def, errReply(422, "Invalid date")
			}
			when = t
		}
		return sig(p.Name, p.Email, when), nil
	}
	author, rep := person(in.Author, sig(bot.login, bot.email(), now))
	if rep != nil {
		return rep
	}
	committer, rep := person(in.Committer, author)
	if rep != nil {
		return rep
	}
	cm := &object.Commit{Author: author, Committer: committer, Message: *in.Message, TreeHash: plumbing.NewHash(in.Tree), ParentHashes: parents}
	h := g.putCommit(cm)
	cm, _ = g.commit(h)
	rep = jsonReply(http.StatusCreated, c.s.gitCommitJSON(c.repo, cm))
	rep.header.Set("Location", c.s.repoAPI(c.repo)+"/git/commits/"+h.String())
	return rep
}

func (c *call) getGitCommit() *reply {
	sha := c.params["commit_sha"]
	if !plumbing.IsHash(sha) {
		return errReply(http.StatusNotFound, "Not Found")
	}
	cm, err := c.repo.git.commit(plumbing.NewHash(sha))
	if err != nil {
		return errReply(http.StatusNotFound, "Not Found")
	}
	return jsonReply(http.StatusOK, c.s.gitCommitJSON(c.repo, cm))
}

func validRefName(name string) bool {
	if !strings.HasPrefix(name, "refs/") || strings.Count(name, "/") < 2 || strings.HasSuffix(name, "/") {
		return false
	}
	for _, bad := range []string{"..", "//", "@{", "\\", " ", "~", "^", ":", "?", "*", "[", ".lock/"} {
		if strings.Contains(name, bad) {
			return false
		}
	}
	return !strings.HasSuffix(name, ".lock")
}

func (c *call) createRef() *reply {
	var in struct {
		Ref string `json:"ref"`
		SHA string `json:"sha"`
	}
	if rep := c.decode(&in); rep != nil {
		return rep
	}
	if !validRefName(in.Ref) {
		return errReply(422, "Reference name is not valid")
	}
	g := c.repo.git
	if !plumbing.IsHash(in.SHA) || !g.has(plumbing.CommitObject, plumbing.NewHash(in.SHA)) {
		return errReply(422, "Object does not exist")
	}
	if _, ok := g.ref(in.Ref); ok {
		return errReply(422, "Reference already exists")
	}
	g.setRef(in.Ref, plumbing.NewHash(in.SHA))
	c.repo.pushed = c.s.now()
	rep := jsonReply(http.StatusCreated, c.s.refJSON(c.repo, in.Ref, plumbing.NewHash(in.SHA)))
	rep.header.Set("Location", c.s.repoAPI(c.repo)+"/git/"+in.Ref)
	return rep
}

func (c *call) getRef() *reply {
	name := "refs/" + c.params["ref"]
	h, ok := c.repo.git.ref(name)
	if !ok {
		return errReply(http.StatusNotFound, "Not Found")
	}
	return jsonReply(http.StatusOK, c.s.refJSON(c.repo, name, h))
}

func (c *call) updateRef() *reply {
	var in struct {
		SHA   string `json:"sha"`
		Force bool   `json:"force"`
	}
	if rep := c.decode(&in); rep != nil {
		return rep
	}
	name := "refs/" + c.params["ref"]
	g := c.repo.git
	old, ok := g.ref(name)
	if !ok {
		return errReply(422, "Reference does not exist")
	}
	if !plumbing.IsHash(in.SHA) || !g.has(plumbing.CommitObject, plumbing.NewHash(in.SHA)) {
		return errReply(422, "Object does not exist")
	}
	h := plumbing.NewHash(in.SHA)
	if !in.Force && !g.isAncestor(old, h) {
		return errReply(422, "Update is not a fast forward")
	}
	g.setRef(name, h)
	c.repo.pushed = c.s.now()
	return jsonReply(http.StatusOK, c.s.refJSON(c.repo, name, h))
}

func (c *call) deleteRef() *reply {
	name := "refs/" + c.params["ref"]
	if _, ok := c.repo.git.ref(name); !ok {
		return errReply(422, "Reference does not exist")
	}
	if branch, ok := strings.CutPrefix(name, "refs/heads/"); ok {
		c.s.deleteBranchLocked(c.repo, branch)
	} else {
		c.repo.git.deleteRef(name)
	}
	return &reply{status: http.StatusNoContent, header: http.Header{}}
}

// ---- archives ----

func (c *call) tarball() *reply {
	rev := c.params["ref"]
	if rev == "" {
		rev = c.repo.defaultBranch
	}
	h, ok := c.repo.git.resolve(rev)
	if !ok {
		return errReply(http.StatusNotFound, "Not Found")
	}
	// Like codeload: a short-lived token in the URL, no header needed.
	tok := randomToken("")
	c.s.downloads[tok] = download{repo: c.repo, sha: h, expires: c.s.opts.Clock().Add(5 * time.Minute)}
	loc := fmt.Sprintf("%s/_codeload/%s/%s/legacy.tar.gz/%s?token=%s", c.s.URL(), c.repo.owner, c.repo.name, url.PathEscape(rev), tok)
	rep := &reply{status: http.StatusFound, header: http.Header{}}
	rep.header.Set("Location", loc)
	return rep
}

func (c *call) codeload() *reply {
	d, ok := c.s.downloads[c.r.URL.Query().Get("token")]
	if !ok || !c.s.opts.Clock().Before(d.expires) || !strings.EqualFold(d.repo.owner, c.params["owner"]) ||
		!strings.EqualFold(d.repo.name, c.params["repo"]) {
		return errReply(http.StatusNotFound, "Not Found")
	}
	data, err := d.repo.git.tarball(d.repo.owner, d.repo.name, d.sha)
	if err != nil {
		return errReply(http.StatusInternalServerError, err.Error())
	}
	rep := &reply{status: http.StatusOK, header: http.Header{}, body: data}
	rep.header.Set("Content-Type", "application/x-gzip")
	rep.header.Set("Content-Disposition", fmt.Sprintf("attachment; filename=%s-%s-%s.tar.gz", d.repo.owner, d.repo.name, d.sha.String()[:7]))
	return rep
}

// ---- commits ----

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

func (c *call) listCommits() *reply {
	g := c.repo.git
	q := c.r.URL.Query()
	rev := q.Get("sha")
	if rev == "" {
		rev = c.repo.defaultBranch
	}
	h, ok := g.resolve(rev)
	if !ok {
		return errReply(http.StatusNotFound, "No commit found for SHA: "+rev)
	}
	var items []any
	for _, cm := range g.log(h, nil) {
		if a := q.Get("author"); a != "" && !strings.EqualFold(cm.Author.Email, a) && !c.authorIs(cm, a) {
			continue
		}
		if p := q.Get("path"); p != "" && !c.touches(cm, p) {
			continue
		}
		items = append(items, c.s.commitJSON(c.repo, cm, false))
	}
	if items == nil {
		items = []any{}
	}
	return c.paged(items)
}

func (c *call) authorIs(cm *object.Commit, login string) bool {
	u := c.s.userByEmail(cm.Author.Email)
	return u != nil && strings.EqualFold(u.login, login)
}

func (c *call) touches(cm *object.Commit, p string) bool {
	var from plumbing.Hash
	if len(cm.ParentHashes) > 0 {
		if pc, err := c.repo.git.commit(cm.ParentHashes[0]); err == nil {
			from = pc.TreeHash
		}
	}
	for _, ch := range c.repo.git.diffTrees(from, cm.TreeHash) {
		if ch.path == p || strings.HasPrefix(ch.path, strings.TrimSuffix(p, "/")+"/") {
			return true
		}
	}
	return false
}

func (c *call) getCommit() *reply {
	h, ok := c.repo.git.resolve(c.params["ref"])
	if !ok {
		return errReply(422, "No commit found for SHA: "+c.params["ref"])
	}
	cm, _ := c.repo.git.commit(h)
	return jsonReply(http.StatusOK, c.s.commitJSON(c.repo, cm, true))
}

func (c *call) compare() *reply {
	g := c.repo.git
	bh := c.params["basehead"]
	base, head, ok := strings.Cut(bh, "...")
	if !ok {
		return errReply(http.StatusNotFound, "Not Found")
	}
	bsha, ok1 := g.resolve(base)
	hsha, ok2 := g.resolve(head)
	if !ok1 || !ok2 {
		return errReply(http.StatusNotFound, "Not Found")
	}
	baseSet, headSet := g.ancestors(bsha), g.ancestors(hsha)
	ahead := g.log(hsha, baseSet)
	behind := g.log(bsha, headSet)
	status := "diverged"
	switch {
	case len(ahead) == 0 && len(behind) == 0:
		status = "identical"
	case len(behind) == 0:
		status = "ahead"
	case len(ahead) == 0:
		status = "behind"
	}
	bc, _ := g.commit(bsha)
	mb := bc
	if h, ok := g.mergeBase(bsha, hsha); ok {
		mb, _ = g.commit(h)
	}
	hc, _ := g.commit(hsha)
	// Oldest first, as GitHub lists a comparison.
	commits := []any{}
	for i := len(ahead) - 1; i >= 0; i-- {
		commits = append(commits, c.s.commitJSON(c.repo, ahead[i], false))
	}
	files, _, _ := c.s.filesJSON(c.repo, g.diffTrees(mb.TreeHash, hc.TreeHash), hsha.String())
	html := c.s.repoHTML(c.repo) + "/compare/" + bh
	return jsonReply(http.StatusOK, map[string]any{
		"url": c.s.repoAPI(c.repo) + "/compare/" + bh, "html_url": html,
		"permalink_url": c.s.repoHTML(c.repo) + "/compare/" + bsha.String()[:7] + "..." + hsha.String()[:7],
		"diff_url":      html + ".diff", "patch_url": html + ".patch",
		"base_commit": c.s.commitJSON(c.repo, bc, false), "merge_base_commit": c.s.commitJSON(c.repo, mb, false),
		"status": status, "ahead_by": len(ahead), "behind_by": len(behind), "total_commits": len(ahead),
		"commits": commits, "files": files,
	})
}
