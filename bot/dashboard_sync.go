package bot

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/keyed"
)

// dashboard is what a replica knows of one repository's dashboard issue.
type dashboard struct {
	number int    // the issue; 0 until found or opened
	body   string // its body as last read or written
	closed bool   // a person closed it: left closed, not written
	seen   string // the replica's rows when it last read a closed one
	// retryAt: GitHub refused the dashboard for a cause a person must fix
	// (no issues permission, issues turned off); it is tried again then.
	retryAt time.Time
}

// dashOffFor is how long a refused dashboard waits before it is tried
// (and, still refused, logged) again.
const dashOffFor = time.Hour

// hasDashboard reports whether repo (owner/name) has a dashboard: the
// config's dashboards, matched in any case as GitHub matches names.
func (r *Runner) hasDashboard(repo string) bool {
	for _, d := range r.Dashboards {
		if strings.EqualFold(d, repo) {
			return true
		}
	}
	return false
}

// noteRow keeps a target's row after its poll, for its repository's
// dashboard. Called after the runner counted the poll a failure or a
// success.
func (r *Runner) noteRow(t *Target, out Outcome, err error) {
	if !r.hasDashboard(t.Config.Repo) {
		return
	}
	name := t.Config.Name
	r.mu.Lock()
	defer r.mu.Unlock()
	row, ok := rowOf(name, out, err, r.failed[name], r.failingSince[name])
	if !ok {
		return
	}
	if r.rows == nil {
		r.rows = map[string]dashRow{}
	}
	r.rows[name] = row
}

// syncDashboards brings the dashboards of the round's repositories in line
// with their targets' rows. A dashboard's failure is logged, never counted
// against the round or a target: the dashboard only reports.
func (r *Runner) syncDashboards(ctx context.Context, round []*Target) {
	if len(r.Dashboards) == 0 || ctx.Err() != nil {
		return
	}
	repos := map[string]*Target{}
	for _, t := range round {
		if r.hasDashboard(t.Config.Repo) {
			repos[strings.ToLower(t.Config.Repo)] = t
		}
	}
	keys := make([]string, 0, len(repos))
	for k := range repos {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// One sync at a time: a wake's round and the tick's share the issue.
	r.dashMu.Lock()
	defer r.dashMu.Unlock()
	for _, k := range keys {
		t := repos[k]
		err := r.syncDashboard(ctx, k, t.Config.Owner(), t.Config.RepoName())
		switch {
		case err == nil:
		case githubapi.IsDeferred(err) || githubapi.RateLimited(err) != "":
			// The write budget is kept for pull requests: a later round.
			r.log().Info("drift dashboard waits for the write budget", "repo", k, "reason", err.Error())
		default:
			r.log().Error("drift dashboard not updated", "repo", k, "error", err.Error())
		}
	}
}

// dashTargets are the names of the repository's targets (sorted), the
// rows of those this replica polls, and whether it opens the dashboard
// when there is none: the replica that polls the first target does, so
// two replicas never open two.
func (r *Runner) dashTargets(key string) (names []string, mine map[string]dashRow, opener bool) {
	mine = map[string]dashRow{}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, t := range r.Targets {
		if strings.ToLower(t.Config.Repo) != key {
			continue
		}
		names = append(names, t.Config.Name)
		if r.Leases != nil && !r.Leases.Holds(t.Config.Name) {
			continue
		}
		if row, ok := r.rows[t.Config.Name]; ok {
			mine[t.Config.Name] = row
		}
	}
	sort.Strings(names)
	opener = len(names) > 0 && (r.Leases == nil || r.Leases.Holds(names[0]))
	return names, mine, opener
}

// syncDashboard writes one repository's dashboard when its content
// changes, and only then. A lone replica knows the body it last read or
// wrote, so an unchanged set of rows costs no request at all; replicas
// read the issue every round (a conditional GET: a 304 costs no rate
// limit), so a row another replica's write took back with a stale body is
// put right at the next round rather than at the next change.
func (r *Runner) syncDashboard(ctx context.Context, key, owner, name string) error {
	if r.dashes == nil {
		r.dashes = map[string]*dashboard{}
	}
	d := r.dashes[key]
	if d == nil {
		d = &dashboard{}
		r.dashes[key] = d
	}
	if r.Bot.Metrics.Clock().Before(d.retryAt) {
		return nil
	}
	inst := r.Bot.application().Stamp()
	names, mine, opener := r.dashTargets(key)
	if len(mine) == 0 && !opener {
		return nil // nothing of this replica's to say: no request
	}
	seen := keyed.Fingerprint(mine)
	if d.number != 0 && r.Leases == nil {
		if d.closed && d.seen == seen {
			return nil
		}
		if parts, ok := parseDashboard(d.body, inst); ok && !d.closed && sameRows(parts.rows, mergeRows(parts.rows, mine, names)) {
			return nil
		}
	}
	d.seen = seen
	is, err := r.readDashboard(ctx, d, owner, name, inst)
	if err != nil {
		return r.dashRefused(d, key, err)
	}
	if is == nil {
		if !opener {
			return nil // the replica that polls the first target opens it
		}
		body, err := renderDashboard("", "", inst, mergeRows(nil, mine, names))
		if err != nil {
			return err
		}
		created, _, err := r.Bot.GitHub.Issues.Create(ctx, owner, name, &github.IssueRequest{Title: github.String(dashTitle(inst)), Body: github.String(body)})
		if err != nil {
			// An answer lost on the way is found by its marker next round.
			return r.dashRefused(d, key, err)
		}
		d.number, d.body, d.closed = created.GetNumber(), created.GetBody(), false
		r.log().Info("opened the drift dashboard", "repo", key, "issue", d.number)
		return nil
	}
	d.number, d.body = is.GetNumber(), is.GetBody()
	if is.GetState() == "closed" {
		if !d.closed {
			r.log().Info("the drift dashboard is closed; driftback leaves it closed and stops updating it until someone reopens it", "repo", key, "issue", d.number)
		}
		d.closed = true
		return nil
	}
	d.closed = false
	parts, _ := parseDashboard(d.body, inst)
	body, err := renderDashboard(parts.before, parts.after, inst, mergeRows(parts.rows, mine, names))
	// The web editor saves a person's edit with CRLF line ends, the block
	// included: that alone is no change of content.
	if err != nil || body == d.body || strings.ReplaceAll(body, "\r\n", "\n") == strings.ReplaceAll(d.body, "\r\n", "\n") {
		return err
	}
	edited, _, err := r.Bot.GitHub.Issues.Edit(ctx, owner, name, d.number, &github.IssueRequest{Body: github.String(body)})
	if err != nil {
		return r.dashRefused(d, key, err)
	}
	d.body = edited.GetBody()
	return nil
}

// readDashboard is the dashboard issue as GitHub has it now: the known
// one, read again, or found among the issues the App opened by its block
// (never by its title, which a person may change); nil when there is
// none. An issue whose block a person removed is a dashboard no more.
func (r *Runner) readDashboard(ctx context.Context, d *dashboard, owner, name, inst string) (*github.Issue, error) {
	if d.number != 0 {
		is, _, err := r.Bot.GitHub.Issues.Get(ctx, owner, name, d.number)
		if _, gone := githubapi.ErrorStatus(err, http.StatusNotFound); err != nil && !gone {
			return nil, err
		}
		if _, ok := parseDashboard(is.GetBody(), inst); err == nil && ok {
			return is, nil
		}
		d.number, d.body = 0, ""
	}
	// Newest first: the open one if there is one, else the newest closed
	// one (closed by a person: it stays closed, and none is opened anew).
	opts := &github.IssueListByRepoOptions{State: "all", Creator: r.Bot.login, ListOptions: github.ListOptions{PerPage: 100}}
	var closed *github.Issue
	for {
		list, resp, err := r.Bot.GitHub.Issues.ListByRepo(ctx, owner, name, opts)
		if err != nil {
			return nil, err
		}
		for _, is := range list {
			if _, ok := parseDashboard(is.GetBody(), inst); !ok || is.IsPullRequest() {
				continue
			}
			if is.GetState() == "open" {
				return is, nil
			}
			if closed == nil {
				closed = is
			}
		}
		if resp.NextPage == 0 {
			return closed, nil
		}
		opts.Page = resp.NextPage
	}
}

// dashRefused turns GitHub's refusals a person must fix into an error that
// says what to do, and waits dashOffFor before trying again; the targets'
// polls are not affected.
func (r *Runner) dashRefused(d *dashboard, repo string, err error) error {
	if er, ok := githubapi.ErrorStatus(err, http.StatusForbidden); ok && strings.Contains(er.Message, "not accessible by integration") {
		d.retryAt = r.Bot.Metrics.Clock().Add(dashOffFor)
		return fmt.Errorf("the GitHub App lacks the issues: write permission the drift dashboard of %s needs: grant Issues (read and write) in the App's permissions "+
			"and accept it on the installation, or remove %s from dashboards; the targets' polls go on, and the dashboard is tried again in %s: %w",
			repo, repo, dashOffFor, err)
	}
	if er, ok := githubapi.ErrorStatus(err, http.StatusForbidden); ok && strings.Contains(er.Message, "archived") {
		// Read-only: every write would be refused the same way.
		d.retryAt = r.Bot.Metrics.Clock().Add(dashOffFor)
		return fmt.Errorf("%s is archived, so its drift dashboard cannot be written until it is unarchived; tried again in %s: %w", repo, dashOffFor, err)
	}
	if _, ok := githubapi.ErrorStatus(err, http.StatusGone); ok {
		d.retryAt = r.Bot.Metrics.Clock().Add(dashOffFor)
		return fmt.Errorf("issues are turned off in %s, so it can have no drift dashboard: turn them on (Settings → General → Features → Issues) "+
			"or remove %s from dashboards; tried again in %s: %w", repo, repo, dashOffFor, err)
	}
	return err
}
