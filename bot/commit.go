package bot

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/prbody"
	"github.com/driftback/driftback/bot/targetplan"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/repofs"
)

// branchMove is what a poll saw of the PR branch before writing to it.
type branchMove struct {
	exists bool   // the branch exists
	head   string // its head then; the move is refused if it changed since
}

// pushCommit writes the plan's files as one commit on the base head (Git
// Data API: a tree on base_tree, a commit, the ref moved); no clone.
func (b *Bot) pushCommit(ctx context.Context, p *poll, plan *analyzer.Plan, from branchMove) (string, error) {
	base, _, err := b.GitHub.Git.GetCommit(ctx, p.Owner, p.Repo, p.BaseSHA)
	if err != nil {
		return "", fmt.Errorf("base commit %s: %w", githubapi.ShortSHA(p.BaseSHA), err)
	}
	modes, err := b.baseModes(ctx, p, base.GetTree().GetSHA(), plan.Files)
	if err != nil {
		return "", err
	}
	var entries []*github.TreeEntry
	for _, f := range plan.Files {
		if err := targetplan.WritablePath(f.Path); err != nil {
			return "", err
		}
		mode, onBase := modes[f.Path]
		switch {
		case f.Deleted && !onBase:
			continue // already gone; GitHub refuses to delete a missing path
		case !onBase:
			mode = "100644"
		case mode == "120000":
			return "", fmt.Errorf("%s is a symbolic link on the base branch; driftback does not write through links", f.Path)
		case mode != "100644" && mode != "100755":
			return "", fmt.Errorf("%s is not a file on the base branch (mode %s)", f.Path, mode)
		}
		// The file keeps its mode: an executable stays executable.
		e := &github.TreeEntry{Path: github.String(f.Path), Mode: github.String(mode), Type: github.String("blob")}
		if !f.Deleted {
			e.Content = github.String(f.Content)
		}
		entries = append(entries, e)
	}
	treeObj, _, err := b.GitHub.Git.CreateTree(ctx, p.Owner, p.Repo, base.GetTree().GetSHA(), entries)
	if err != nil {
		return "", fmt.Errorf("create tree: %w", err)
	}
	coAuthors := b.coAuthors(ctx, p, plan)
	msg := commitMessage(plan, commitNotes{target: p.Target.Name, edits: prbody.EditSetHash(plan.Files), instance: b.application().Stamp(),
		changedBy: p.Attribution.Text, coAuthors: coAuthors})
	commit, _, err := b.GitHub.Git.CreateCommit(ctx, p.Owner, p.Repo, &github.Commit{
		Message: github.String(msg), Tree: treeObj, Parents: []*github.Commit{{SHA: github.String(p.BaseSHA)}},
	}, nil)
	if err != nil {
		return "", fmt.Errorf("create commit: %w", err)
	}
	if err := b.moveBranch(ctx, p, from, commit.GetSHA()); err != nil {
		return "", err
	}
	return commit.GetSHA(), nil
}

// baseModes reads the mode of each path the plan writes from the base
// tree, opening only the folders on those paths. A path not on the base
// is absent from the map.
func (b *Bot) baseModes(ctx context.Context, p *poll, root string, files []analyzer.File) (map[string]string, error) {
	folders := map[string]map[string]*github.TreeEntry{}
	var folder func(dir string) (map[string]*github.TreeEntry, error)
	folder = func(dir string) (map[string]*github.TreeEntry, error) {
		if f, ok := folders[dir]; ok {
			return f, nil
		}
		sha := root
		if dir != "." {
			parent, err := folder(path.Dir(dir))
			if err != nil {
				return nil, err
			}
			e := parent[path.Base(dir)]
			if e == nil || e.GetType() != "tree" {
				folders[dir] = nil // not a folder on the base: everything under it is new
				return nil, nil
			}
			sha = e.GetSHA()
		}
		t, _, err := b.GitHub.Git.GetTree(ctx, p.Owner, p.Repo, sha, false)
		if err != nil {
			return nil, fmt.Errorf("base tree of %s: %w", dir, err)
		}
		entries := map[string]*github.TreeEntry{}
		for _, e := range t.Entries {
			entries[e.GetPath()] = e
		}
		folders[dir] = entries
		return entries, nil
	}
	modes := map[string]string{}
	for _, f := range files {
		c, err := repofs.Clean(f.Path)
		if err != nil {
			return nil, err
		}
		entries, err := folder(path.Dir(c))
		if err != nil {
			return nil, err
		}
		if e := entries[path.Base(c)]; e != nil {
			modes[f.Path] = e.GetMode()
		}
	}
	return modes, nil
}

// moveBranch points the branch at sha: created when it did not exist, else
// force-moved (the branch is regenerated as one commit on the base head;
// foreign commits froze it before this). GitHub's transient "Reference
// update failed" is tried again; a refusal no retry can fix is returned as
// a *moveRefused.
func (b *Bot) moveBranch(ctx context.Context, p *poll, from branchMove, sha string) error {
	ref := &github.Reference{Ref: github.String("refs/heads/" + p.Branch), Object: &github.GitObject{SHA: github.String(sha)}}
	for attempt := 0; ; attempt++ {
		var err error
		if from.exists {
			// The refs API has no compare-and-swap: read the branch once more
			// right before the forced move, so a push made during this poll
			// is never overwritten (the next poll sees it and freezes the
			// branch).
			if now, ok := b.application().BranchHead(ctx, p.Place); !ok || now != from.head {
				return fmt.Errorf("%s moved during this poll (someone pushed); not overwriting it", p.Branch)
			}
			_, _, err = b.GitHub.Git.UpdateRef(ctx, p.Owner, p.Repo, ref, true)
		} else {
			_, _, err = b.GitHub.Git.CreateRef(ctx, p.Owner, p.Repo, ref)
			// The branch may exist after all: made by this request, whose
			// answer was lost, or by someone since the poll began.
			if err != nil && ctx.Err() == nil {
				if now, ok := b.application().BranchHead(ctx, p.Place); ok {
					if now == sha {
						return nil
					}
					return fmt.Errorf("%s appeared during this poll (someone pushed); not overwriting it", p.Branch)
				}
			}
		}
		if err == nil {
			return nil
		}
		if r := refusalOf(err); r != nil {
			return r
		}
		if attempt < 2 && (refUpdateFailed(err) || (!from.exists && githubapi.UnknownOutcome(ctx, err))) {
			p.Log.Warn("moving the branch failed; trying again", "branch", p.Branch, "error", err.Error())
			continue
		}
		if refUpdateFailed(err) {
			return &moveRefused{reason: "GitHub refused to move the branch three times (Reference update failed)",
				hint: "This is usually a branch protection rule or ruleset that covers `driftback/*` and gives no reason; " +
					"exclude driftback's branches from it, or let the App bypass it. A passing glitch clears at the next poll."}
		}
		return fmt.Errorf("move %s: %w", p.Branch, err)
	}
}

// moveRefused is GitHub refusing to write the branch for a reason that
// trying again cannot fix: a repository ruleset, or workflow changes
// without the workflows permission.
type moveRefused struct {
	reason string // GitHub's words
	hint   string // what a person can do about it
}

func (e *moveRefused) Error() string { return e.reason }

// refusalOf recognises GitHub's refusals to write a ref; nil for anything
// else.
func refusalOf(err error) *moveRefused {
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode >= 500 {
		return nil
	}
	msg := strings.TrimSpace(er.Message)
	switch {
	case strings.Contains(msg, "`workflows` permission"):
		return &moveRefused{reason: msg, hint: "The base branch changed files under `.github/workflows/`, and moving the branch onto it needs " +
			"the App's `workflows` permission (driftback itself never edits workflow files). Grant that permission, or close this " +
			"pull request and delete its branch: driftback then opens a new one from the base branch."}
	case classicProtection(msg):
		return &moveRefused{reason: "branch protection refused it: " + msg,
			hint: "driftback rebuilds its branch as one commit on the base branch, which is a force push, and deletes the branch " +
				"when the drift is gone. A branch protection rule matches `driftback/*` (a pattern such as `*` or `*/*`): narrow it, " +
				"or allow the App to force-push and to bypass required checks and reviews there."}
	case strings.HasPrefix(msg, "Repository rule violations found"):
		rules := strings.Fields(strings.ReplaceAll(strings.TrimPrefix(msg, "Repository rule violations found"), "\n", " "))
		return &moveRefused{reason: "a repository ruleset refused it: " + strings.Join(rules, " "),
			hint: "driftback rebuilds its branch as one commit on the base branch, which is a force push, and deletes the branch " +
				"when the drift is gone. Exclude `driftback/*` from the ruleset, or let the App bypass it."}
	}
	return nil
}

// classicProtection reads GitHub's answers when classic branch protection
// refuses a ref update (as opposed to a ruleset, which names its rules).
func classicProtection(msg string) bool {
	m := strings.ToLower(msg)
	for _, mark := range []string{"protected branch update failed", "required status check", "cannot force-push to this protected branch",
		"cannot force-push to a protected branch", "not authorized to push", "approving review is required"} {
		if strings.Contains(m, mark) {
			return true
		}
	}
	return false
}

// refUpdateFailed is GitHub's 422 for a move that did not happen. It is
// usually transient (the same move succeeds a moment later), but GitHub
// also sends it for a protection that refuses every time: moveBranch tries
// it three times and then says so.
func refUpdateFailed(err error) bool {
	er, ok := githubapi.ErrorStatus(err, http.StatusUnprocessableEntity)
	return ok && er.Message == "Reference update failed"
}

// refGone is the 422 GitHub answers for deleting a ref that is not there
// (a retried delete whose first answer was lost).
func refGone(err error) bool {
	er, ok := githubapi.ErrorStatus(err, http.StatusUnprocessableEntity)
	return ok && er.Message == "Reference does not exist"
}

// blockKey is what a refused move depended on: while all three are the
// same, asking again gets the same answer.
type blockKey struct{ base, edits, head string }

type blocked struct {
	at  blockKey
	why *moveRefused
}

// The trailers of a driftback commit name its target and edit set, so any
// later poll, in any replica, knows the commit for what it is without the
// PR body having been updated.
const (
	trailerTarget   = "Driftback-Target: "
	trailerEdits    = "Driftback-Edits: "
	trailerInstance = "Driftback-Instance: " // absent: the default instance
)

// commitNotes is what a commit message says besides the plan's edits.
type commitNotes struct {
	target, edits, instance string
	// changedBy says who changed an edit's field (Attribution.Text).
	changedBy func(analyzer.Edit) string
	coAuthors []string // Co-authored-by trailers (coAuthors)
}

func commitMessage(plan *analyzer.Plan, n commitNotes) string {
	var b strings.Builder
	fmt.Fprintf(&b, "driftback: record %d live change(s) in %s\n\n", len(plan.Edits), plan.Root)
	for i, e := range plan.Edits {
		if i == 50 {
			fmt.Fprintf(&b, "… and %d more\n", len(plan.Edits)-50)
			break
		}
		fmt.Fprintf(&b, "- %s %s (%s)\n", e.Object, e.Field, e.Route)
		if n.changedBy != nil {
			if who := n.changedBy(e); who != "" {
				fmt.Fprintf(&b, "  changed in the cluster by %s\n", report.PlainText(who))
			}
		}
	}
	// One trailer block, git's convention: Co-authored-by beside ours.
	fmt.Fprintf(&b, "\n%s%s\n%s%s\n", trailerTarget, n.target, trailerEdits, n.edits)
	if n.instance != "" {
		fmt.Fprintf(&b, "%s%s\n", trailerInstance, n.instance)
	}
	for _, t := range n.coAuthors {
		fmt.Fprintln(&b, t)
	}
	return b.String()
}

// ownCommit is a branch head driftback made: on which base, with which
// edit set. instance is set when the commit is this App's for this target
// but another installation's (and ownHead then says it is not ours).
type ownCommit struct{ base, edits, instance string }

// ownHead reads the branch head and says whether it is driftback's own
// commit for this target: signed by GitHub (madeByApp), one parent, and
// trailers naming this target and an edit set. Anything else is someone
// else's, and driftback never moves or rebuilds over it.
func (b *Bot) ownHead(ctx context.Context, p *poll, sha string) (ownCommit, bool, error) {
	if b.login == "" {
		return ownCommit{}, false, errors.New("bot: Options.Login is not set; without it the bot cannot tell its commits from another App's")
	}
	c, _, err := b.GitHub.Repositories.GetCommit(ctx, p.Owner, p.Repo, sha, &github.ListOptions{PerPage: 1})
	if err != nil {
		return ownCommit{}, false, fmt.Errorf("branch head %s: %w", githubapi.ShortSHA(sha), err)
	}
	if !b.madeByApp(c) || len(c.Parents) != 1 {
		return ownCommit{}, false, nil
	}
	msg := strings.TrimRight(c.GetCommit().GetMessage(), "\n")
	lines := strings.Split(msg[strings.LastIndex(msg, "\n\n")+1:], "\n")
	target, edits, instance := "", "", config.DefaultInstance
	for _, l := range lines {
		if v, ok := strings.CutPrefix(l, trailerTarget); ok {
			target = v
		}
		if v, ok := strings.CutPrefix(l, trailerEdits); ok {
			edits = v
		}
		if v, ok := strings.CutPrefix(l, trailerInstance); ok {
			instance = v
		}
	}
	if target != p.Target.Name || edits == "" {
		return ownCommit{}, false, nil
	}
	if instance != b.instance {
		// Another installation's commit: never moved, rebuilt over or
		// deleted by this one.
		return ownCommit{instance: instance}, false, nil
	}
	return ownCommit{base: c.Parents[0].GetSHA(), edits: edits}, true, nil
}

// madeByApp says whether GitHub made c for this App: GitHub verified its
// signature, and GitHub attributes its author to the App's bot account.
// The author alone proves nothing, as GitHub attributes a commit by its
// author e-mail, which anyone can write into a commit; but a commit the App
// creates through the Git Data API with no author, committer or signature
// of its own is signed by GitHub, with the bot as author and GitHub
// (web-flow) as committer. A verified signature is the committer's, so
// the committer must be GitHub or the bot itself: a person who signs a
// commit with their own key is its committer, whatever author it names.
func (b *Bot) madeByApp(c *github.RepositoryCommit) bool {
	v := c.GetCommit().GetVerification()
	if !v.GetVerified() || v.GetReason() != "valid" {
		return false
	}
	bot := func(u *github.User) bool { return u.GetType() == "Bot" && strings.EqualFold(u.GetLogin(), b.login) }
	committer := c.GetCommitter()
	return bot(c.GetAuthor()) && (bot(committer) || (committer.GetLogin() == webFlow && committer.GetType() == "User"))
}

// webFlow is the account GitHub commits and signs as.
const webFlow = "web-flow"
