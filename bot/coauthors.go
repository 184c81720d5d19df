package bot

import (
	"context"
	"fmt"
	"sort"

	"github.com/driftback/driftback/analyzer"
)

// coAuthors are the Co-authored-by trailers of the commit recording plan:
// one for each cluster user behind its edits (as the audit log names
// them) whom the cluster's audit.githubUsers maps to a GitHub login. The
// address is the account's no-reply one, which GitHub attributes to it
// and which shows no private address; the account's id is read once per
// login. A login GitHub does not know is left out and logged: a trailer
// naming nobody is worse than none.
func (b *Bot) coAuthors(ctx context.Context, p *poll, plan *analyzer.Plan) ([]string, error) {
	var out []string
	for _, user := range p.attribution.Users(plan) {
		login, ok := p.t.CoAuthors[user]
		if !ok {
			continue
		}
		trailer, err := b.coAuthor(ctx, login)
		if err != nil {
			return nil, err
		}
		if trailer == "" {
			p.log.Warn("audit.githubUsers names a GitHub login that does not exist; no Co-authored-by for it", "user", user, "login", login)
			continue
		}
		out = append(out, trailer)
	}
	sort.Strings(out)
	return out, nil
}

// coAuthor is the trailer for login, "" when GitHub has no such account.
func (b *Bot) coAuthor(ctx context.Context, login string) (string, error) {
	if v, ok := b.logins.Load(login); ok {
		return v.(string), nil
	}
	u, _, err := b.GitHub.Users.Get(ctx, login)
	trailer := ""
	switch {
	case isNotFound(err):
	case err != nil:
		return "", fmt.Errorf("GitHub user %s: %w", login, err)
	default:
		trailer = fmt.Sprintf("Co-authored-by: %s <%d+%s@users.noreply.github.com>", u.GetLogin(), u.GetID(), u.GetLogin())
	}
	b.logins.Store(login, trailer)
	return trailer, nil
}
