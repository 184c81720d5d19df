package bot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/repofs"
)

// Target is one target with what a reconcile needs beyond its config.
type Target struct {
	Config config.Target // resolved: defaults merged in
	Lister cluster.Lister
	// Applied reads the revision the GitOps tool applied; nil means the
	// target accepted rendering at the base head (appliedRevision.head).
	Applied func(ctx context.Context) (cluster.Applied, error)
}

// Bot reconciles targets against GitHub. Make one with New.
type Bot struct {
	GitHub    *github.Client
	Snapshots *Snapshots
	Metrics   *Metrics
	Log       *slog.Logger

	memo map[string]memo // per target: what the last reconcile saw
}

// Options are the parts of a Bot that have defaults.
type Options struct {
	// Download fetches repository archives, which GitHub serves from
	// another host; it is never sent the installation token. nil:
	// http.DefaultClient.
	Download *http.Client
	Metrics  *Metrics     // nil: a registry of its own
	Log      *slog.Logger // nil: logs are discarded
	// Renders is how many kustomize renders are kept across polls; a
	// target costs up to three (plain, dyed, verified). 0 keeps none.
	Renders int
}

// New returns a Bot that talks to GitHub through gh.
func New(gh *github.Client, opts Options) *Bot {
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics()
	}
	s := &Snapshots{GitHub: gh, Download: opts.Download}
	if opts.Renders > 0 {
		s.Renders = analyzer.NewRenderCache(opts.Renders)
	}
	return &Bot{GitHub: gh, Snapshots: s, Metrics: opts.Metrics, Log: opts.Log}
}

// memo lets an idle poll skip all work: nothing it depends on moved.
type memo struct {
	base, live, config string
}

// Outcome says what one reconcile did, for logs and tests.
type Outcome struct {
	Idle      bool // nothing changed since the last poll: no build, no write
	Plan      *analyzer.Plan
	PR        int    // the open pull request's number, 0 if none
	Pushed    bool   // a new commit went to the branch
	Frozen    bool   // someone else committed on the branch
	Declined  bool   // the same edit set was closed unmerged before
	Waiting   string // why nothing was proposed yet (the applied revision lags)
	CheckRuns int    // check runs created or updated
}

// Reconcile runs one poll of one target.
func (b *Bot) Reconcile(ctx context.Context, t *Target) (Outcome, error) {
	tc := t.Config
	owner, repo := tc.Owner(), tc.RepoName()
	branch := tc.Branch()
	log := b.log().With("target", tc.Name)
	b.Metrics.Inc("driftback_polls_total", map[string]string{"target": tc.Name})

	baseBranch := tc.BaseBranch
	if baseBranch == "" {
		r, _, err := b.GitHub.Repositories.Get(ctx, owner, repo)
		if err != nil {
			return Outcome{}, fmt.Errorf("repository %s/%s: %w", owner, repo, err)
		}
		baseBranch = r.GetDefaultBranch()
	}
	ref, _, err := b.GitHub.Git.GetRef(ctx, owner, repo, "heads/"+baseBranch)
	if err != nil {
		return Outcome{}, fmt.Errorf("base branch %s: %w", baseBranch, err)
	}
	baseSHA := ref.GetObject().GetSHA()

	objs, err := t.Lister.List(ctx, cluster.Scope{
		Namespaces: tc.Namespaces, NamespaceSelector: tc.NamespaceSelector,
		IncludeKinds: tc.Kinds.Include, ExcludeKinds: tc.Kinds.Exclude,
	})
	if err != nil {
		return Outcome{}, fmt.Errorf("cluster %s: %w", tc.Cluster, err)
	}
	prs, prsResp, err := b.GitHub.PullRequests.List(ctx, owner, repo, &github.PullRequestListOptions{
		State: "all", Head: owner + ":" + branch, ListOptions: github.ListOptions{PerPage: 100},
	})
	if err != nil {
		return Outcome{}, fmt.Errorf("pull requests of %s: %w", branch, err)
	}
	m := memo{base: baseSHA, live: fingerprint(objs), config: fingerprint(tc)}
	if b.memo == nil {
		b.memo = map[string]memo{}
	}
	if last, ok := b.memo[tc.Name]; ok && last == m && notModified(prsResp) {
		return Outcome{Idle: true}, nil
	}

	out, err := b.reconcile(ctx, t, log, baseBranch, baseSHA, objs, prs)
	if err != nil {
		return out, err
	}
	// Prime the conditional-request cache with what this poll changed, so
	// an unchanged next poll is all 304s.
	if _, _, err := b.GitHub.PullRequests.List(ctx, owner, repo, &github.PullRequestListOptions{
		State: "all", Head: owner + ":" + branch, ListOptions: github.ListOptions{PerPage: 100},
	}); err != nil {
		return out, err
	}
	b.memo[tc.Name] = m
	return out, nil
}

func (b *Bot) reconcile(ctx context.Context, t *Target, log *slog.Logger, baseBranch, baseSHA string, objs []cluster.Object, prs []*github.PullRequest) (Outcome, error) {
	tc := t.Config
	owner, repo := tc.Owner(), tc.RepoName()
	var out Outcome

	// The revision the cluster runs (DESIGN §7): render there, and propose
	// onto the base head only when the root's inputs are the same at both.
	renderSHA := baseSHA
	var orchestrator []string
	if t.Applied != nil {
		a, err := t.Applied(ctx)
		if err != nil {
			return out, err
		}
		orchestrator = a.Context
		if a.Revision == "" {
			out.Waiting = "the GitOps tool reports no applied revision yet"
		} else {
			renderSHA = a.Revision
		}
	}
	live, err := cluster.LiveObjects(objs, cluster.NewRules(tc.Appliers, tc.Ignore))
	if err != nil {
		return out, err
	}
	var plan *analyzer.Plan
	if out.Waiting == "" {
		renderRepo, err := b.Snapshots.Load(ctx, owner, repo, renderSHA)
		if err != nil {
			return out, err
		}
		if renderSHA != baseSHA {
			baseRepo, err := b.Snapshots.Load(ctx, owner, repo, baseSHA)
			if err != nil {
				return out, err
			}
			if !renderRepo.SameInputs(baseRepo, tc.Root) {
				out.Waiting = fmt.Sprintf("the cluster runs %s, and the files of %s changed since then on the base branch; waiting for the GitOps tool to apply %s", short(renderSHA), tc.Root, short(baseSHA))
			}
		}
		if out.Waiting == "" {
			plan, err = renderRepo.Plan(tc.Root, live, analyzer.Options{WriteScope: tc.WriteScope, OrchestratorContext: orchestrator})
			if err != nil {
				// The input itself is unusable (the root was deleted, a file
				// is malformed): say so on the base head and leave the pull
				// request as it is until Git is fixed.
				failed := &analyzer.Plan{Root: tc.Root, Refusals: []analyzer.Refusal{{Code: analyzer.CodeRenderFailed, Message: err.Error(),
					Hint: "fix the repository so that the target's root builds"}}}
				res := resultOf(failed, tc)
				res.conclusion = "failure"
				n, cerr := b.postChecks(ctx, t, []string{baseSHA}, res)
				out.CheckRuns = n
				if cerr != nil {
					return out, cerr
				}
				return out, fmt.Errorf("target %s: %w", tc.Name, err)
			}
			for _, f := range plan.Files {
				if err := writablePath(f.Path); err != nil {
					plan.Files = nil
					plan.Edits = nil
					plan.Refusals = append(plan.Refusals, analyzer.Refusal{Code: analyzer.CodeOutOfScope, File: f.Path, Message: err.Error(),
						Hint: "driftback never writes workflow files; make the change by hand"})
					break
				}
			}
		}
	}
	out.Plan = plan
	if out.Waiting != "" {
		log.Info("waiting for the applied revision", "reason", out.Waiting)
		n, err := b.postChecks(ctx, t, []string{baseSHA}, checkResult{conclusion: "neutral", title: "Waiting for the GitOps tool",
			summary: out.Waiting + "\n\n(" + analyzer.CodeNotAppliedYet + ")"})
		out.CheckRuns = n
		return out, err
	}
	for _, r := range plan.Refusals {
		b.Metrics.Inc("driftback_refusals_total", map[string]string{"target": tc.Name, "code": r.Code})
	}
	b.Metrics.Add("driftback_edits_total", map[string]string{"target": tc.Name}, float64(len(plan.Edits)))

	open, lastClosed := splitPRs(prs)
	var pr *github.PullRequest
	if len(plan.Files) == 0 {
		// Nothing to propose: drift gone (merged, or reverted in the
		// cluster). Close what is open.
		if open != nil {
			if err := b.closeResolved(ctx, t, open); err != nil {
				return out, err
			}
		}
	} else {
		pr, err = b.propose(ctx, t, log, baseBranch, baseSHA, plan, open, lastClosed, &out)
		if err != nil {
			return out, err
		}
	}
	res := resultOf(plan, tc)
	shas := []string{baseSHA}
	if pr != nil && !out.Frozen {
		out.PR = pr.GetNumber()
		// The branch head renders to what the cluster runs: that commit is
		// in line with the cluster.
		shas = append(shas, pr.GetHead().GetSHA())
	}
	n, err := b.postChecksFor(ctx, t, shas, res, baseSHA)
	out.CheckRuns = n
	return out, err
}

// propose brings the branch and the pull request in line with the plan.
func (b *Bot) propose(ctx context.Context, t *Target, log *slog.Logger, baseBranch, baseSHA string, plan *analyzer.Plan, open, lastClosed *github.PullRequest, out *Outcome) (*github.PullRequest, error) {
	tc := t.Config
	owner, repo, branch := tc.Owner(), tc.RepoName(), tc.Branch()
	hash := editSetHash(plan.Files)

	if open == nil && lastClosed != nil {
		if st, ok := parseState(lastClosed.GetBody()); ok && st.Edits == hash && !lastClosed.GetMerged() && st.Closed == "" {
			if _, exists := b.branchHead(ctx, owner, repo, branch); exists {
				// A reviewer declined exactly this edit set: stay quiet
				// until the live state changes.
				out.Declined = true
				log.Info("edit set declined before; staying quiet", "pr", lastClosed.GetNumber())
				return nil, nil
			}
		}
	}
	var st prState
	if open != nil {
		st, _ = parseState(open.GetBody())
	}
	head, exists := b.branchHead(ctx, owner, repo, branch)
	regenerate := open != nil && regenerateTicked(open.GetBody())
	foreign := exists && open != nil && st.Head != "" && head != st.Head
	if exists && open == nil {
		// A branch without our open PR (left from an earlier run, or its PR
		// was deleted): it is ours to rebuild.
		foreign = false
	}
	out.Frozen = foreign && !regenerate
	if !out.Frozen {
		upToDate := exists && head == st.Head && st.Base == baseSHA && st.Edits == hash
		if !upToDate {
			sha, err := b.pushCommit(ctx, owner, repo, branch, baseSHA, plan, exists, head)
			if err != nil {
				return nil, err
			}
			head, out.Pushed = sha, true
			b.Metrics.Inc("driftback_commits_total", map[string]string{"target": tc.Name})
		}
		st = prState{Version: 1, Target: tc.Name, Edits: hash, Head: head, Base: baseSHA}
	} else {
		st.Version, st.Target = 1, tc.Name
	}
	body := b.body(t, plan, st, out.Frozen, head)
	if open == nil {
		pr, err := b.createPR(ctx, t, branch, baseBranch, body)
		if err != nil {
			return nil, err
		}
		log.Info("opened pull request", "pr", pr.GetNumber(), "edits", len(plan.Edits), "refusals", len(plan.Refusals))
		return pr, nil
	}
	if open.GetBody() != body {
		pr, _, err := b.GitHub.PullRequests.Edit(ctx, owner, repo, open.GetNumber(), &github.PullRequest{Body: github.String(body)})
		if err != nil {
			return nil, fmt.Errorf("update pull request #%d: %w", open.GetNumber(), err)
		}
		open = pr
	}
	if out.Pushed {
		// The listed head SHA predates the push.
		open.Head.SHA = github.String(head)
	}
	return open, nil
}

func (b *Bot) createPR(ctx context.Context, t *Target, branch, base, body string) (*github.PullRequest, error) {
	tc := t.Config
	owner, repo := tc.Owner(), tc.RepoName()
	draft := tc.PullRequest != nil && tc.PullRequest.Draft != nil && *tc.PullRequest.Draft
	pr, _, err := b.GitHub.PullRequests.Create(ctx, owner, repo, &github.NewPullRequest{
		Title: github.String(fmt.Sprintf("driftback: bring %s in line with the cluster", tc.Name)),
		Head:  github.String(branch), Base: github.String(base), Body: github.String(body), Draft: github.Bool(draft),
	})
	if err != nil {
		if isUnprocessable(err) {
			// One already exists for this branch (a restart between push and
			// create, or a race): the next poll finds and updates it.
			return nil, fmt.Errorf("create pull request for %s: one exists already; the next poll updates it: %w", branch, err)
		}
		return nil, fmt.Errorf("create pull request for %s: %w", branch, err)
	}
	if tc.PullRequest != nil {
		if len(tc.PullRequest.Labels) > 0 {
			if _, _, err := b.GitHub.Issues.AddLabelsToIssue(ctx, owner, repo, pr.GetNumber(), tc.PullRequest.Labels); err != nil {
				b.log().Warn("could not label pull request", "pr", pr.GetNumber(), "error", err.Error())
			}
		}
		if len(tc.PullRequest.Reviewers)+len(tc.PullRequest.TeamReviewers) > 0 {
			if _, _, err := b.GitHub.PullRequests.RequestReviewers(ctx, owner, repo, pr.GetNumber(), github.ReviewersRequest{
				Reviewers: tc.PullRequest.Reviewers, TeamReviewers: tc.PullRequest.TeamReviewers}); err != nil {
				b.log().Warn("could not request reviewers", "pr", pr.GetNumber(), "error", err.Error())
			}
		}
	}
	return pr, nil
}

// closeResolved closes the PR once its drift is gone, and deletes the
// branch only when nobody else committed to it.
func (b *Bot) closeResolved(ctx context.Context, t *Target, pr *github.PullRequest) error {
	tc := t.Config
	owner, repo, branch := tc.Owner(), tc.RepoName(), tc.Branch()
	st, _ := parseState(pr.GetBody())
	if _, _, err := b.GitHub.Issues.CreateComment(ctx, owner, repo, pr.GetNumber(), &github.IssueComment{
		Body: github.String("The cluster matches Git again, so driftback closes this pull request."),
	}); err != nil {
		return fmt.Errorf("comment on #%d: %w", pr.GetNumber(), err)
	}
	st.Version, st.Target, st.Closed = 1, tc.Name, "driftback"
	body := report.ReplaceState(pr.GetBody(), st.encode())
	if _, _, err := b.GitHub.PullRequests.Edit(ctx, owner, repo, pr.GetNumber(), &github.PullRequest{State: github.String("closed"), Body: github.String(body)}); err != nil {
		return fmt.Errorf("close #%d: %w", pr.GetNumber(), err)
	}
	if head, ok := b.branchHead(ctx, owner, repo, branch); ok && head == st.Head {
		if _, err := b.GitHub.Git.DeleteRef(ctx, owner, repo, "heads/"+branch); err != nil && !isNotFound(err) {
			return fmt.Errorf("delete branch %s: %w", branch, err)
		}
	}
	return nil
}

// pushCommit writes the plan's files as one commit on the base head (Git
// Data API: a tree on base_tree, a commit, the ref moved); no clone.
func (b *Bot) pushCommit(ctx context.Context, owner, repo, branch, baseSHA string, plan *analyzer.Plan, exists bool, expect string) (string, error) {
	base, _, err := b.GitHub.Git.GetCommit(ctx, owner, repo, baseSHA)
	if err != nil {
		return "", fmt.Errorf("base commit %s: %w", short(baseSHA), err)
	}
	var entries []*github.TreeEntry
	for _, f := range plan.Files {
		if err := writablePath(f.Path); err != nil {
			return "", err
		}
		e := &github.TreeEntry{Path: github.String(f.Path), Mode: github.String("100644"), Type: github.String("blob")}
		if !f.Deleted {
			e.Content = github.String(f.Content)
		}
		entries = append(entries, e)
	}
	treeObj, _, err := b.GitHub.Git.CreateTree(ctx, owner, repo, base.GetTree().GetSHA(), entries)
	if err != nil {
		return "", fmt.Errorf("create tree: %w", err)
	}
	msg := commitMessage(plan)
	commit, _, err := b.GitHub.Git.CreateCommit(ctx, owner, repo, &github.Commit{
		Message: github.String(msg), Tree: treeObj, Parents: []*github.Commit{{SHA: github.String(baseSHA)}},
	}, nil)
	if err != nil {
		return "", fmt.Errorf("create commit: %w", err)
	}
	ref := &github.Reference{Ref: github.String("refs/heads/" + branch), Object: &github.GitObject{SHA: commit.SHA}}
	if exists {
		// The refs API has no compare-and-swap: read the branch once more
		// right before the forced move, so a push made during this poll is
		// never overwritten (the next poll sees it and freezes the branch).
		if now, ok := b.branchHead(ctx, owner, repo, branch); !ok || now != expect {
			return "", fmt.Errorf("%s moved during this poll (someone pushed); not overwriting it", branch)
		}
		// The branch is regenerated as one commit on the base head: a
		// forced move is the point (foreign commits froze it before this).
		_, _, err = b.GitHub.Git.UpdateRef(ctx, owner, repo, ref, true)
	} else {
		_, _, err = b.GitHub.Git.CreateRef(ctx, owner, repo, ref)
	}
	if err != nil {
		return "", fmt.Errorf("move %s: %w", branch, err)
	}
	return commit.GetSHA(), nil
}

func commitMessage(plan *analyzer.Plan) string {
	var b strings.Builder
	fmt.Fprintf(&b, "driftback: record %d live change(s) in %s\n\n", len(plan.Edits), plan.Root)
	for i, e := range plan.Edits {
		if i == 50 {
			fmt.Fprintf(&b, "… and %d more\n", len(plan.Edits)-50)
			break
		}
		fmt.Fprintf(&b, "- %s %s (%s)\n", e.Object, e.Field, e.Route)
	}
	return b.String()
}

// writablePath refuses what the bot must never write.
func writablePath(p string) error {
	c, err := repofs.Clean(p)
	if err != nil {
		return err
	}
	if c == ".github/workflows" || strings.HasPrefix(c, ".github/workflows/") {
		return fmt.Errorf("%s is a workflow file; driftback never writes under .github/workflows/", c)
	}
	return nil
}

func (b *Bot) branchHead(ctx context.Context, owner, repo, branch string) (string, bool) {
	ref, _, err := b.GitHub.Git.GetRef(ctx, owner, repo, "heads/"+branch)
	if err != nil {
		return "", false
	}
	return ref.GetObject().GetSHA(), true
}

// body renders the PR body: the analyzer's markdown, the controls and the
// hidden state.
func (b *Bot) body(t *Target, plan *analyzer.Plan, st prState, frozen bool, head string) string {
	tc := t.Config
	base := strings.TrimSuffix(b.GitHub.BaseURL.String(), "/")
	base = strings.TrimSuffix(strings.TrimSuffix(base, "/api/v3"), "/api")
	web := strings.Replace(base, "://api.github.com", "://github.com", 1)
	controls := []string{regenerateLine}
	if frozen {
		controls = append([]string{"> **Frozen:** someone else committed to this branch, so driftback no longer pushes to it. Tick the box below to regenerate it from the base branch (the other commits are discarded)."}, controls...)
	}
	return report.Markdown(plan, report.MarkdownOptions{
		Target: tc.Name,
		FileURL: func(path string, line int) string {
			if head == "" {
				return ""
			}
			u := fmt.Sprintf("%s/%s/%s/blob/%s/%s", web, tc.Owner(), tc.RepoName(), head, path)
			if line > 0 {
				u += fmt.Sprintf("#L%d", line)
			}
			return u
		},
		Controls: controls,
		State:    st.encode(),
	})
}

// splitPRs finds the open PR of the branch and the most recent closed one.
func splitPRs(prs []*github.PullRequest) (open, lastClosed *github.PullRequest) {
	for _, p := range prs {
		switch p.GetState() {
		case "open":
			if open == nil || p.GetNumber() > open.GetNumber() {
				open = p
			}
		case "closed":
			if lastClosed == nil || p.GetNumber() > lastClosed.GetNumber() {
				lastClosed = p
			}
		}
	}
	return open, lastClosed
}

// fingerprint hashes a value canonically.
func fingerprint(v any) string {
	var data []byte
	switch t := v.(type) {
	case []cluster.Object:
		parts := make([]string, len(t))
		for i, o := range t {
			parts[i] = jsonvalue.Canonical(o.Object) + jsonvalue.Canonical(o.ManagedFields)
		}
		sort.Strings(parts)
		data = []byte(strings.Join(parts, "\n"))
	default:
		data, _ = json.Marshal(v)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}

func (b *Bot) log() *slog.Logger {
	if b.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return b.Log
}
