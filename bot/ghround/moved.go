package ghround

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot/pollstate"
)

// A repository renamed, transferred, or under a renamed account keeps
// answering at its old owner/name: GitHub redirects there, and the client
// follows. Following is not enough everywhere: a pull-request list filtered
// by head=owner:branch matches the repository's current owner only, so the
// bot must learn the current name and use it (DESIGN §11).

// at is where the request that got resp went: after a redirect, where the
// repository is now. GitHub redirects a moved repository's old name to
// /repositories/{id}/..., which names no owner: then id is set and owner
// and name are empty.
func at(resp *http.Response) (owner, name string, id int64, ok bool) {
	if resp == nil || resp.Request == nil || resp.Request.URL == nil {
		return "", "", 0, false
	}
	p := resp.Request.URL.Path
	if i := strings.Index(p, "/repositories/"); i >= 0 { // GitHub Enterprise has an /api/v3 prefix
		n, _, _ := strings.Cut(p[i+len("/repositories/"):], "/")
		id, err := strconv.ParseInt(n, 10, 64)
		return "", "", id, err == nil && id > 0
	}
	i := strings.Index(p, "/repos/")
	if i < 0 {
		return "", "", 0, false
	}
	parts := strings.SplitN(p[i+len("/repos/"):], "/", 3)
	if len(parts) < 2 || parts[0] == "" || parts[1] == "" {
		return "", "", 0, false
	}
	return parts[0], parts[1], 0, true
}

// Moved is a target's repository as configured and where it is now.
type Moved struct{ Configured, Current string }

// Current points the poll at the repository's current owner/name once a
// move is known, so it asks there directly rather than through redirects;
// a config that since names another repository is taken as it is.
func (r *Reader) Current(p *pollstate.Poll) {
	if m, ok := r.moved.Get(p.Target.Name); ok && strings.EqualFold(m.Configured, p.Target.Repo) {
		p.Owner, p.Repo, _ = strings.Cut(m.Current, "/")
	}
}

// follow makes the poll use the repository's current owner/name when the
// answer came from elsewhere than asked (its full_name, when the redirect
// named only its id), and says so once per move: the config still names
// the old one.
func (r *Reader) follow(ctx context.Context, gh *github.Client, p *pollstate.Poll, resp *github.Response) error {
	if resp == nil {
		return nil
	}
	owner, name, id, ok := at(resp.Response)
	if !ok || id == 0 && strings.EqualFold(owner+"/"+name, p.Owner+"/"+p.Repo) {
		return nil
	}
	if id != 0 {
		repo, _, err := gh.Repositories.GetByID(ctx, id)
		if err != nil {
			return fmt.Errorf("repository %s/%s moved (GitHub redirects it to repository %d): %w", p.Owner, p.Repo, id, err)
		}
		owner, name, _ = strings.Cut(repo.GetFullName(), "/")
		if owner == "" || name == "" {
			return fmt.Errorf("repository %s/%s moved to repository %d, whose full_name %q GitHub gave is not owner/name", p.Owner, p.Repo, id, repo.GetFullName())
		}
	}
	m := Moved{Configured: p.Target.Repo, Current: owner + "/" + name}
	p.Owner, p.Repo = owner, name
	if last, _ := r.moved.Get(p.Target.Name); last == m {
		return nil
	}
	r.moved.Set(p.Target.Name, m)
	p.Log.Warn("the repository moved: GitHub redirects the configured name to its current one, which driftback uses; update the target's repo in the config",
		"configured", m.Configured, "current", m.Current)
	return nil
}

// MovedAway explains a 404 that came from following a redirect: the
// repository moved where this installation cannot see it.
func MovedAway(p *pollstate.Poll, err error) error {
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode != http.StatusNotFound {
		return err
	}
	owner, name, id, ok := at(er.Response)
	switch {
	case !ok || id == 0 && strings.EqualFold(owner+"/"+name, p.Owner+"/"+p.Repo):
		return err
	case id != 0:
		return fmt.Errorf("repository %s/%s moved (GitHub redirects it to repository %d), where this installation does not cover it: "+
			"install the App on the account it went to and name its new owner/name in target %s's repo: %w", p.Owner, p.Repo, id, p.Target.Name, err)
	}
	return fmt.Errorf("repository %s/%s moved to %s/%s, which this installation does not cover: install the App on %s and name %s/%s in target %s's repo: %w",
		p.Owner, p.Repo, owner, name, owner, owner, name, p.Target.Name, err)
}
