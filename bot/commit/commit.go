package commit

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
	"github.com/driftback/driftback/bot/app"
	"github.com/driftback/driftback/bot/attribution"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/prbody"
	"github.com/driftback/driftback/bot/targetplan"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/repofs"
)

// Writer writes one poll's commit onto the target's pull request branch,
// and reads whose commit the branch's head is.
type Writer struct {
	App   *app.App
	Place app.Place
	// Attribution says who changed each edit's field, for the message.
	Attribution *attribution.Attribution
	// CoAuthors maps cluster users to GitHub logins (audit.githubUsers).
	CoAuthors map[string]string
	Logins    *Logins
}

// Move is what a poll saw of the PR branch before writing to it.
type Move struct {
	Exists bool   // the branch exists
	Head   string // its head then; the move is refused if it changed since
}

// Push writes the plan's files as one commit on the base head (Git
// Data API: a tree on base_tree, a commit, the ref moved); no clone.
func (w Writer) Push(ctx context.Context, plan *analyzer.Plan, from Move) (string, error) {
	base, _, err := w.App.GitHub.Git.GetCommit(ctx, w.Place.Owner, w.Place.Repo, w.Place.BaseSHA)
	if err != nil {
		return "", fmt.Errorf("base commit %s: %w", githubapi.ShortSHA(w.Place.BaseSHA), err)
	}
	modes, err := w.baseModes(ctx, base.GetTree().GetSHA(), plan.Files)
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
	treeObj, _, err := w.App.GitHub.Git.CreateTree(ctx, w.Place.Owner, w.Place.Repo, base.GetTree().GetSHA(), entries)
	if err != nil {
		return "", fmt.Errorf("create tree: %w", err)
	}
	coAuthors := w.coAuthors(ctx, plan)
	msg := commitMessage(plan, commitNotes{target: w.Place.Target.Name, edits: prbody.EditSetHash(plan.Files), instance: w.App.Stamp(),
		deployment: w.App.Deployment, changedBy: w.Attribution.Text, coAuthors: coAuthors})
	commit, _, err := w.App.GitHub.Git.CreateCommit(ctx, w.Place.Owner, w.Place.Repo, &github.Commit{
		Message: github.String(msg), Tree: treeObj, Parents: []*github.Commit{{SHA: github.String(w.Place.BaseSHA)}},
	}, nil)
	if err != nil {
		return "", fmt.Errorf("create commit: %w", err)
	}
	if err := w.moveBranch(ctx, from, commit.GetSHA()); err != nil {
		return "", err
	}
	return commit.GetSHA(), nil
}

// baseModes reads the mode of each path the plan writes from the base
// tree, opening only the folders on those paths. A path not on the base
// is absent from the map.
func (w Writer) baseModes(ctx context.Context, root string, files []analyzer.File) (map[string]string, error) {
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
		t, _, err := w.App.GitHub.Git.GetTree(ctx, w.Place.Owner, w.Place.Repo, sha, false)
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
// a *Refused.
func (w Writer) moveBranch(ctx context.Context, from Move, sha string) error {
	ref := &github.Reference{Ref: github.String("refs/heads/" + w.Place.Branch), Object: &github.GitObject{SHA: github.String(sha)}}
	for attempt := 0; ; attempt++ {
		var err error
		if from.Exists {
			// The refs API has no compare-and-swap: read the branch once more
			// right before the forced move, so a push made during this poll
			// is never overwritten (the next poll sees it and freezes the
			// branch).
			if now, ok := w.App.BranchHead(ctx, w.Place); !ok || now != from.Head {
				return fmt.Errorf("%s moved during this poll (someone pushed); not overwriting it", w.Place.Branch)
			}
			_, _, err = w.App.GitHub.Git.UpdateRef(ctx, w.Place.Owner, w.Place.Repo, ref, true)
		} else {
			_, _, err = w.App.GitHub.Git.CreateRef(ctx, w.Place.Owner, w.Place.Repo, ref)
			// The branch may exist after all: made by this request, whose
			// answer was lost, or by someone since the poll began.
			if err != nil && ctx.Err() == nil {
				if now, ok := w.App.BranchHead(ctx, w.Place); ok {
					if now == sha {
						return nil
					}
					return fmt.Errorf("%s appeared during this poll (someone pushed); not overwriting it", w.Place.Branch)
				}
			}
		}
		if err == nil {
			return nil
		}
		if r := RefusalOf(err); r != nil {
			return r
		}
		if attempt < 2 && (refUpdateFailed(err) || (!from.Exists && githubapi.UnknownOutcome(ctx, err))) {
			w.Place.Log.Warn("moving the branch failed; trying again", "branch", w.Place.Branch, "error", err.Error())
			continue
		}
		if refUpdateFailed(err) {
			return &Refused{Reason: "GitHub refused to move the branch three times (Reference update failed)",
				Hint: "This is usually a branch protection rule or ruleset that covers `driftback/*` and gives no reason; " +
					"exclude driftback's branches from it, or let the App bypass it. A passing glitch clears at the next poll."}
		}
		return fmt.Errorf("move %s: %w", w.Place.Branch, err)
	}
}

// Refused is GitHub refusing to write the branch for a reason that
// trying again cannot fix: a repository ruleset, or workflow changes
// without the workflows permission.
type Refused struct {
	Reason string // GitHub's words
	Hint   string // what a person can do about it
}

func (e *Refused) Error() string { return e.Reason }

// RefusalOf recognises GitHub's refusals to write a ref; nil for anything
// else.
func RefusalOf(err error) *Refused {
	var er *github.ErrorResponse
	if !errors.As(err, &er) || er.Response == nil || er.Response.StatusCode >= 500 {
		return nil
	}
	msg := strings.TrimSpace(er.Message)
	switch {
	case strings.Contains(msg, "`workflows` permission"):
		return &Refused{Reason: msg, Hint: "The base branch changed files under `.github/workflows/`, and moving the branch onto it needs " +
			"the App's `workflows` permission (driftback itself never edits workflow files). Grant that permission, or close this " +
			"pull request and delete its branch: driftback then opens a new one from the base branch."}
	case classicProtection(msg):
		return &Refused{Reason: "branch protection refused it: " + msg,
			Hint: "driftback rebuilds its branch as one commit on the base branch, which is a force push, and deletes the branch " +
				"when the drift is gone. A branch protection rule matches `driftback/*` (a pattern such as `*` or `*/*`): narrow it, " +
				"or allow the App to force-push and to bypass required checks and reviews there."}
	case strings.HasPrefix(msg, "Repository rule violations found"):
		rules := strings.Fields(strings.ReplaceAll(strings.TrimPrefix(msg, "Repository rule violations found"), "\n", " "))
		return &Refused{Reason: "a repository ruleset refused it: " + strings.Join(rules, " "),
			Hint: "driftback rebuilds its branch as one commit on the base branch, which is a force push, and deletes the branch " +
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

// RefGone is the 422 GitHub answers for deleting a ref that is not there
// (a retried delete whose first answer was lost).
func RefGone(err error) bool {
	er, ok := githubapi.ErrorStatus(err, http.StatusUnprocessableEntity)
	return ok && er.Message == "Reference does not exist"
}

// BlockKey is what a refused move depended on: while all three are the
// same, asking again gets the same answer.
type BlockKey struct{ Base, Edits, Head string }

// Blocked is a move GitHub refused, and what it depended on.
type Blocked struct {
	At  BlockKey
	Why *Refused
}

// The trailers of a driftback commit name its target and edit set, so any
// later poll, in any replica, knows the commit for what it is without the
// PR body having been updated.
const (
	trailerTarget   = "Driftback-Target: "
	trailerEdits    = "Driftback-Edits: "
	trailerInstance = "Driftback-Instance: " // absent: the default instance
	// absent: a deployment that could not tell which it is (bot/app)
	trailerDeployment = "Driftback-Deployment: "
)

// commitNotes is what a commit message says besides the plan's edits.
type commitNotes struct {
	target, edits, instance, deployment string
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
	if n.deployment != "" {
		fmt.Fprintf(&b, "%s%s\n", trailerDeployment, n.deployment)
	}
	for _, t := range n.coAuthors {
		fmt.Fprintln(&b, t)
	}
	return b.String()
}

// Own is a branch head driftback made: on which base, with which edit
// set. Instance is set when the commit is this App's for this target but
// another installation's, Deployment when it is another deployment's
// made lately (app.App.OtherDeploymentHolds); OwnHead then says it is
// not ours.
type Own struct{ Base, Edits, Instance, Deployment string }

// OwnHead reads the branch head and says whether it is driftback's own
// commit for this target: signed by GitHub (madeByApp), one parent, and
// trailers naming this target and an edit set. Anything else is someone
// else's, and driftback never moves or rebuilds over it.
func (w Writer) OwnHead(ctx context.Context, sha string) (Own, bool, error) {
	if w.App.Login == "" {
		return Own{}, false, errors.New("bot: Options.Login is not set; without it the bot cannot tell its commits from another App's")
	}
	c, _, err := w.App.GitHub.Repositories.GetCommit(ctx, w.Place.Owner, w.Place.Repo, sha, &github.ListOptions{PerPage: 1})
	if err != nil {
		return Own{}, false, fmt.Errorf("branch head %s: %w", githubapi.ShortSHA(sha), err)
	}
	if !w.madeByApp(c) || len(c.Parents) != 1 {
		return Own{}, false, nil
	}
	msg := strings.TrimRight(c.GetCommit().GetMessage(), "\n")
	lines := strings.Split(msg[strings.LastIndex(msg, "\n\n")+1:], "\n")
	target, edits, instance, deployment := "", "", config.DefaultInstance, ""
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
		if v, ok := strings.CutPrefix(l, trailerDeployment); ok {
			deployment = v
		}
	}
	if target != w.Place.Target.Name || edits == "" {
		return Own{}, false, nil
	}
	if instance != w.App.Instance {
		// Another installation's commit: never moved, rebuilt over or
		// deleted by this one.
		return Own{Instance: instance}, false, nil
	}
	if w.App.OtherDeploymentHolds(deployment, c.GetCommit().GetCommitter().GetDate().Time) {
		// GitHub dates the commits it makes for the App.
		return Own{Deployment: deployment}, false, nil
	}
	return Own{Base: c.Parents[0].GetSHA(), Edits: edits}, true, nil
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
func (w Writer) madeByApp(c *github.RepositoryCommit) bool {
	v := c.GetCommit().GetVerification()
	if !v.GetVerified() || v.GetReason() != "valid" {
		return false
	}
	bot := func(u *github.User) bool { return u.GetType() == "Bot" && strings.EqualFold(u.GetLogin(), w.App.Login) }
	committer := c.GetCommitter()
	return bot(c.GetAuthor()) && (bot(committer) || (committer.GetLogin() == webFlow && committer.GetType() == "User"))
}

// webFlow is the account GitHub commits and signs as.
const webFlow = "web-flow"
