package bot

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/google/go-github/v62/github"
)

// A repository renamed, transferred, or under a renamed account keeps
// answering at its old owner/name: GitHub redirects there, and the client
// follows. Following is not enough everywhere: a pull-request list filtered
// by head=owner:branch matches the repository's current owner only, so the
// bot must learn the current name and use it (DESIGN §11).

// repoAt is the owner and name in the path of the request that got resp:
// after a redirect, the repository's current ones.
func repoAt(resp *github.Response) (owner, name string, ok bool) {
	if resp == nil || resp.Response == nil || resp.Request == nil || resp.Request.URL == nil {
		return "", "", false
	}
	p := resp.Request.URL.Path
	i := strings.Index(p, "/repos/") // GitHub Enterprise has an /api/v3 prefix
	if i < 0 {
		return "", "", false
	}
	parts := strings.SplitN(p[i+len("/repos/"):], "/", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return "", "", false
	}
	return parts[0], parts[1], true
}

// movedRepo is a target's repository as configured and where it is now.
type movedRepo struct{ configured, current string }

// current points the poll at the repository's current owner/name once a
// move is known, so it asks there directly rather than through redirects;
// a config that since names another repository is taken as it is.
func (b *Bot) current(p *poll) {
	if m, ok := b.moved.get(p.t.Config.Name); ok && strings.EqualFold(m.configured, p.t.Config.Repo) {
		p.owner, p.repo, _ = strings.Cut(m.current, "/")
	}
}

// follow makes the poll use the repository's current owner/name when the
// answer came from elsewhere than asked, and says so once per move: the
// config still names the old one.
func (b *Bot) follow(p *poll, resp *github.Response) {
	owner, name, ok := repoAt(resp)
	if !ok || strings.EqualFold(owner+"/"+name, p.owner+"/"+p.repo) {
		return
	}
	m := movedRepo{configured: p.t.Config.Repo, current: owner + "/" + name}
	p.owner, p.repo = owner, name
	if last, _ := b.moved.get(p.t.Config.Name); last == m {
		return
	}
	b.moved.set(p.t.Config.Name, m)
	p.log.Warn("the repository moved: GitHub redirects the configured name to its current one, which driftback uses; update the target's repo in the config",
		"configured", m.configured, "current", m.current)
}

// movedAway explains a 404 that came from following a redirect: the
// repository moved to an account this installation does not cover.
func movedAway(p *poll, err error) error {
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode != http.StatusNotFound {
		return err
	}
	owner, name, ok := repoAt(&github.Response{Response: er.Response})
	if !ok || strings.EqualFold(owner+"/"+name, p.owner+"/"+p.repo) {
		return err
	}
	return fmt.Errorf("repository %s/%s moved to %s/%s, which this installation does not cover: install the App on %s and name %s/%s in target %s's repo: %w",
		p.owner, p.repo, owner, name, owner, owner, name, p.t.Config.Name, err)
}
