package commit

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/bot/githubapi"
)

// coAuthors are the Co-authored-by trailers of the commit recording plan:
// one for each cluster user the audit log names alone behind one of its
// edits (Attribution.Authors) whom the cluster's audit.githubUsers maps to
// a GitHub login. The address is the account's no-reply one, which GitHub
// attributes to it and which shows no private address; the account's id is
// read once per login. A login GitHub does not know, or cannot be asked
// about now, is left out and logged: a co-author is extra, and a trailer
// naming nobody is worse than none.
func (w Writer) coAuthors(ctx context.Context, plan *analyzer.Plan) []string {
	var out []string
	for _, user := range w.Attribution.Authors(plan) {
		login, ok := w.CoAuthors[user]
		if !ok {
			continue
		}
		trailer, err := w.Logins.trailer(ctx, w.App.GitHub, login)
		switch {
		case err != nil:
			w.Place.Log.Warn("GitHub did not say who a login is; no Co-authored-by for it in this commit", "user", user, "login", login, "error", err)
		case trailer == "":
			w.Place.Log.Warn("audit.githubUsers names a GitHub login that does not exist; no Co-authored-by for it", "user", user, "login", login)
		default:
			out = append(out, trailer)
		}
	}
	sort.Strings(out)
	return out
}

// trailer is the Co-authored-by trailer for login, "" when GitHub has no such account
// (remembered); an error is not remembered.
func (l *Logins) trailer(ctx context.Context, gh *github.Client, login string) (string, error) {
	if v, ok := l.m.Load(login); ok {
		return v.(string), nil
	}
	u, _, err := gh.Users.Get(ctx, login)
	trailer := ""
	switch {
	case githubapi.IsNotFound(err):
	case err != nil:
		return "", err
	default:
		trailer = fmt.Sprintf("Co-authored-by: %s <%d+%s@users.noreply.github.com>", u.GetLogin(), u.GetID(), u.GetLogin())
	}
	l.m.Store(login, trailer)
	return trailer, nil
}

// Logins remembers the Co-authored-by trailer of each GitHub login asked
// about, across polls: an account's id does not change.
type Logins struct{ m sync.Map }
