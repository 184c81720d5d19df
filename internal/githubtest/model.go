package githubtest

import (
	"crypto/rsa"
	"fmt"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

type user struct {
	login string
	id    int64
	typ   string // User, Organization, Bot
	// mail replaces the no-reply address as the user's commit e-mail
	// (web-flow's noreply@github.com).
	mail string
}

type app struct {
	id      int64
	slug    string
	owner   string // the account that registered it
	pub     *rsa.PublicKey
	created time.Time
	perms   map[string]string // permission -> read|write
	events  []string
	// The webhook a manifest set: where deliveries go, whether they are
	// sent, and the secret GitHub generated to sign them.
	hookURL       string
	hookActive    bool
	webhookSecret string
}

// can reports whether the app holds permission at level (read or write).
func (a *app) can(permission, level string) bool {
	got := a.perms[permission]
	return got == "write" || (got == "read" && level == "read")
}

type installation struct {
	id        int64
	app       int64
	owner     string
	created   time.Time
	suspended *time.Time // when an owner suspended it; nil while active
	// selected are the repositories (ids) it may reach when its owner
	// chose "Only select repositories"; nil: all of the owner's.
	selected map[int64]bool
}

// reaches reports whether the installation may reach rp. Holds s.mu.
func (in *installation) reaches(rp *repo) bool {
	return strings.EqualFold(in.owner, rp.owner) && (in.selected == nil || in.selected[rp.id])
}

// selection is the installation's repository_selection.
func (in *installation) selection() string {
	if in.selected != nil {
		return "selected"
	}
	return "all"
}

type token struct {
	value        string
	installation int64
	expires      time.Time
}

type download struct {
	repo    *repo
	sha     plumbing.Hash
	expires time.Time
}

type repo struct {
	id            int64
	owner, name   string
	defaultBranch string
	git           *store
	created       time.Time
	pushed        time.Time
	pulls         []*pull
	checkRuns     []*checkRun
	runsByHead    map[string][]*checkRun // checkRuns by head_sha, oldest first (addCheckRun)
	nextNumber    int
	rulesets      []Ruleset
	noDrafts      bool             // a private repository on a plan without draft pull requests
	archived      bool             // read-only: every write is refused
	issues        []*issue         // numbered with the pull requests
	issuesOff     bool             // has_issues false: the issue endpoints answer 410
	collaborators []string         // logins with access besides the owner
	teams         []string         // team slugs with access
	suites        map[string]int64 // check suite ids by "app/sha"
	suiteBranch   map[int64]string // a suite's head_branch, fixed when it is made
}

type pull struct {
	number     int
	id         int64
	title      string
	body       string
	state      string
	head, base string // branch names
	headSHA    string // last known head, kept after the branch goes
	user       string
	created    time.Time
	updated    time.Time
	closed     *time.Time
	merged     *time.Time
	mergedBy   string
	mergeSHA   string
	draft      bool
	labels     []*label
	reviewers  []string
	teams      []string
	comments   []*comment
	maintainer bool
}

type label struct {
	id   int64
	name string
}

type comment struct {
	id      int64
	body    string
	user    string
	created time.Time
	updated time.Time
}

type checkRun struct {
	id          int64
	name        string
	headSHA     string
	status      string
	conclusion  string
	started     *time.Time
	completed   *time.Time
	detailsURL  string
	externalID  string
	title       string
	summary     string
	text        string
	annotations []map[string]any
	app         int64
	suite       int64 // the check suite: one per App and commit
}

// suiteLocked is the check suite of app's runs on sha: GitHub keeps one per
// App and commit, made with the first run. Holds s.mu.
func (s *Server) suiteLocked(rp *repo, app int64, sha string) int64 {
	k := fmt.Sprintf("%d/%s", app, sha)
	if id, ok := rp.suites[k]; ok {
		return id
	}
	if rp.suites == nil {
		rp.suites, rp.suiteBranch = map[string]int64{}, map[int64]string{}
	}
	id := s.id()
	rp.suites[k] = id
	// GitHub names the branch the commit was pushed to, and keeps it when
	// the branch moves on: a branch whose head the commit is now.
	if refs, err := rp.git.st.IterReferences(); err == nil {
		refs.ForEach(func(r *plumbing.Reference) error {
			if r.Name().IsBranch() && r.Hash().String() == sha && rp.suiteBranch[id] == "" {
				rp.suiteBranch[id] = r.Name().Short()
			}
			return nil
		})
	}
	return id
}

func key(owner, name string) string { return strings.ToLower(owner + "/" + name) }

func (s *Server) repoLocked(owner, name string) *repo { return s.repos[key(owner, name)] }

// mustRepoLocked is owner/name's repository, for the test-side helpers,
// which a test calls only with a repository it made: any other is the
// test's own mistake. Holds s.mu.
func (s *Server) mustRepoLocked(owner, name string) *repo {
	rp := s.repoLocked(owner, name)
	if rp == nil {
		panic("githubtest: no repo " + owner + "/" + name)
	}
	return rp
}

func (rp *repo) pull(number int) *pull {
	for _, pr := range rp.pulls {
		if pr.number == number {
			return pr
		}
	}
	return nil
}

// addCheckRun keeps a new check run, listed by its commit too: a list for
// a ref reads only that commit's runs, where a scan of every run made ten
// thousand targets' first polls quadratic.
func (rp *repo) addCheckRun(cr *checkRun) {
	rp.checkRuns = append(rp.checkRuns, cr)
	if rp.runsByHead == nil {
		rp.runsByHead = map[string][]*checkRun{}
	}
	rp.runsByHead[cr.headSHA] = append(rp.runsByHead[cr.headSHA], cr)
}
