package dashboard

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot/app"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/keyed"
	"github.com/driftback/driftback/bot/pollstate"
	"github.com/driftback/driftback/config"
)

// dashboard is what a replica knows of one repository's dashboard issue.
type dashboard struct {
	number int    // the issue; 0 until found or opened
	body   string // its body as last read or written
	closed bool   // a person closed it: left closed, not written
	// shared: the body last read holds another deployment's rows, which
	// it may write at any time: read it every round (deployments.go).
	shared bool
	// readAt is when the body was last read: a lone replica reads it
	// again at least every seenEvery, so that it finds another deployment
	// that began to share it and renews its note before the other drops
	// its rows.
	readAt time.Time
	seen   string // the replica's rows when it last read a closed one
	// retryAt: GitHub refused the dashboard for a cause a person must fix
	// (no issues permission, issues turned off); it is tried again then.
	retryAt time.Time
}

// OffFor is how long a refused dashboard waits before it is tried
// (and, still refused, logged) again.
const OffFor = time.Hour

// Syncer keeps a replica's drift dashboards: each target's row after its
// poll, and each repository's issue as last read or written. Its zero
// value is ready.
type Syncer struct {
	mu   sync.Mutex
	rows map[string]dashRow // by target: its row after its last poll here

	syncMu sync.Mutex            // one sync at a time: a wake's round and the tick's share the issue
	dashes map[string]*dashboard // by repository, lower-case
}

// Env is what a sync reads besides its own state: the installation it
// writes as, the runner's targets and which of them this replica polls.
type Env struct {
	App *app.App
	Log *slog.Logger
	// Repos are the repositories (owner/name) with a dashboard (config
	// dashboards).
	Repos   []string
	Targets []config.Target // every target of the runner
	// Holds says whether this replica polls a target; nil: every one.
	Holds func(target string) bool
}

func (e Env) holds(target string) bool { return e.Holds == nil || e.Holds(target) }

// Has reports whether repo (owner/name) has a dashboard: the config's
// dashboards, matched in any case as GitHub matches names.
func (e Env) Has(repo string) bool {
	for _, d := range e.Repos {
		if strings.EqualFold(d, repo) {
			return true
		}
	}
	return false
}

// Note keeps a target's row after its poll, for its repository's
// dashboard. failures is how many of its polls in a row failed, this one
// included; since is when the first of them ran.
func (s *Syncer) Note(env Env, tc config.Target, out pollstate.Outcome, err error, failures int, since time.Time) {
	if !env.Has(tc.Repo) {
		return
	}
	row, ok := rowOf(tc.Name, out, err, failures, since)
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rows == nil {
		s.rows = map[string]dashRow{}
	}
	s.rows[tc.Name] = row
}

// Sync brings the dashboards of the round's repositories in line
// with their targets' rows. A dashboard's failure is logged, never counted
// against the round or a target: the dashboard only reports.
func (s *Syncer) Sync(ctx context.Context, env Env, round []config.Target) {
	if len(env.Repos) == 0 || ctx.Err() != nil {
		return
	}
	repos := map[string]config.Target{}
	for _, t := range round {
		if env.Has(t.Repo) {
			repos[strings.ToLower(t.Repo)] = t
		}
	}
	keys := make([]string, 0, len(repos))
	for k := range repos {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	// One sync at a time: a wake's round and the tick's share the issue.
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	for _, k := range keys {
		t := repos[k]
		err := s.syncOne(ctx, env, k, t.Owner(), t.RepoName())
		switch {
		case err == nil:
		case githubapi.IsDeferred(err) || githubapi.RateLimited(err) != "":
			// The write budget is kept for pull requests: a later round.
			env.Log.Info("drift dashboard waits for the write budget", "repo", k, "reason", err.Error())
		default:
			env.Log.Error("drift dashboard not updated", "repo", k, "error", err.Error())
		}
	}
}

// dashTargets are the names of the repository's targets (sorted), the
// rows of those this replica polls, and whether it opens the dashboard
// when there is none: the replica that polls the first target does, so
// two replicas never open two.
func (s *Syncer) dashTargets(env Env, key string) (names []string, mine map[string]dashRow, opener bool) {
	mine = map[string]dashRow{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range env.Targets {
		if strings.ToLower(t.Repo) != key {
			continue
		}
		names = append(names, t.Name)
		if !env.holds(t.Name) {
			continue
		}
		if row, ok := s.rows[t.Name]; ok {
			mine[t.Name] = row
		}
	}
	sort.Strings(names)
	opener = len(names) > 0 && env.holds(names[0])
	return names, mine, opener
}

// syncOne writes one repository's dashboard when its content
// changes, and only then. A lone replica knows the body it last read or
// wrote, so an unchanged set of rows costs no request at all; replicas
// read the issue every round (a conditional GET: a 304 costs no rate
// limit), so a row another replica's write took back with a stale body is
// put right at the next round rather than at the next change.
func (s *Syncer) syncOne(ctx context.Context, env Env, key, owner, name string) error {
	if s.dashes == nil {
		s.dashes = map[string]*dashboard{}
	}
	d := s.dashes[key]
	if d == nil {
		d = &dashboard{}
		s.dashes[key] = d
	}
	if env.App.Metrics.Clock().Before(d.retryAt) {
		return nil
	}
	inst := env.App.Stamp()
	names, mine, opener := s.dashTargets(env, key)
	if len(mine) == 0 && !opener {
		return nil // nothing of this replica's to say: no request
	}
	seen := keyed.Fingerprint(mine)
	me, now := env.App.Deployment, env.App.Metrics.Clock()
	if d.number != 0 && env.Holds == nil && !d.shared && now.Sub(d.readAt) < seenEvery {
		if d.closed && d.seen == seen {
			return nil
		}
		if parts, ok := parseDashboard(d.body, inst); ok && !d.closed && sameState(parts.state, mergeState(parts.state, mine, names, me, now)) {
			return nil
		}
	}
	d.seen = seen
	is, err := readDashboard(ctx, env, d, owner, name, inst)
	if err != nil {
		return dashRefused(env, d, key, err)
	}
	if is == nil {
		if !opener {
			return nil // the replica that polls the first target opens it
		}
		body, err := renderDashboard("", "", mergeState(dashState{Instance: inst}, mine, names, me, now))
		if err != nil {
			return err
		}
		created, _, err := env.App.GitHub.Issues.Create(ctx, owner, name, &github.IssueRequest{Title: github.String(dashTitle(inst)), Body: github.String(body)})
		if err != nil {
			// An answer lost on the way is found by its marker next round.
			return dashRefused(env, d, key, err)
		}
		d.number, d.body, d.closed, d.readAt = created.GetNumber(), created.GetBody(), false, now
		env.Log.Info("opened the drift dashboard", "repo", key, "issue", d.number)
		return nil
	}
	d.number, d.body, d.readAt = is.GetNumber(), is.GetBody(), now
	if is.GetState() == "closed" {
		if !d.closed {
			env.Log.Info("the drift dashboard is closed; driftback leaves it closed and stops updating it until someone reopens it", "repo", key, "issue", d.number)
		}
		d.closed = true
		return nil
	}
	d.closed = false
	parts, _ := parseDashboard(d.body, inst)
	parts.state.Instance = inst
	d.shared = sharedWith(parts.state.Rows, me)
	body, err := renderDashboard(parts.before, parts.after, mergeState(parts.state, mine, names, me, now))
	// The web editor saves a person's edit with CRLF line ends, the block
	// included: that alone is no change of content.
	if err != nil || body == d.body || strings.ReplaceAll(body, "\r\n", "\n") == strings.ReplaceAll(d.body, "\r\n", "\n") {
		return err
	}
	edited, _, err := env.App.GitHub.Issues.Edit(ctx, owner, name, d.number, &github.IssueRequest{Body: github.String(body)})
	if err != nil {
		return dashRefused(env, d, key, err)
	}
	d.body = edited.GetBody()
	return nil
}

// readDashboard is the dashboard issue as GitHub has it now: the known
// one, read again, or found among the issues the App opened by its block
// (never by its title, which a person may change); nil when there is
// none. An issue whose block a person removed is a dashboard no more.
func readDashboard(ctx context.Context, env Env, d *dashboard, owner, name, inst string) (*github.Issue, error) {
	if d.number != 0 {
		is, _, err := env.App.GitHub.Issues.Get(ctx, owner, name, d.number)
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
	opts := &github.IssueListByRepoOptions{State: "all", Creator: env.App.Login, ListOptions: github.ListOptions{PerPage: 100}}
	var closed *github.Issue
	for {
		list, resp, err := env.App.GitHub.Issues.ListByRepo(ctx, owner, name, opts)
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
// says what to do, and waits OffFor before trying again; the targets'
// polls are not affected.
func dashRefused(env Env, d *dashboard, repo string, err error) error {
	if er, ok := githubapi.ErrorStatus(err, http.StatusForbidden); ok && strings.Contains(er.Message, "not accessible by integration") {
		d.retryAt = env.App.Metrics.Clock().Add(OffFor)
		return fmt.Errorf("the GitHub App lacks the issues: write permission the drift dashboard of %s needs: grant Issues (read and write) in the App's permissions "+
			"and accept it on the installation, or remove %s from dashboards; the targets' polls go on, and the dashboard is tried again in %s: %w",
			repo, repo, OffFor, err)
	}
	if er, ok := githubapi.ErrorStatus(err, http.StatusForbidden); ok && strings.Contains(er.Message, "archived") {
		// Read-only: every write would be refused the same way.
		d.retryAt = env.App.Metrics.Clock().Add(OffFor)
		return fmt.Errorf("%s is archived, so its drift dashboard cannot be written until it is unarchived; tried again in %s: %w", repo, OffFor, err)
	}
	if _, ok := githubapi.ErrorStatus(err, http.StatusGone); ok {
		d.retryAt = env.App.Metrics.Clock().Add(OffFor)
		return fmt.Errorf("issues are turned off in %s, so it can have no drift dashboard: turn them on (Settings → General → Features → Issues) "+
			"or remove %s from dashboards; tried again in %s: %w", repo, repo, OffFor, err)
	}
	return err
}
