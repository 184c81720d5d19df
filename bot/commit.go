package bot

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/analyzer"
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
	base, _, err := b.GitHub.Git.GetCommit(ctx, p.owner, p.repo, p.baseSHA)
	if err != nil {
		return "", fmt.Errorf("base commit %s: %w", short(p.baseSHA), err)
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
	treeObj, _, err := b.GitHub.Git.CreateTree(ctx, p.owner, p.repo, base.GetTree().GetSHA(), entries)
	if err != nil {
		return "", fmt.Errorf("create tree: %w", err)
	}
	msg := commitMessage(plan)
	commit, _, err := b.GitHub.Git.CreateCommit(ctx, p.owner, p.repo, &github.Commit{
		Message: github.String(msg), Tree: treeObj, Parents: []*github.Commit{{SHA: github.String(p.baseSHA)}},
	}, nil)
	if err != nil {
		return "", fmt.Errorf("create commit: %w", err)
	}
	ref := &github.Reference{Ref: github.String("refs/heads/" + p.branch), Object: &github.GitObject{SHA: commit.SHA}}
	if from.exists {
		// The refs API has no compare-and-swap: read the branch once more
		// right before the forced move, so a push made during this poll is
		// never overwritten (the next poll sees it and freezes the branch).
		if now, ok := b.branchHead(ctx, p); !ok || now != from.head {
			return "", fmt.Errorf("%s moved during this poll (someone pushed); not overwriting it", p.branch)
		}
		// The branch is regenerated as one commit on the base head: a
		// forced move is the point (foreign commits froze it before this).
		_, _, err = b.GitHub.Git.UpdateRef(ctx, p.owner, p.repo, ref, true)
	} else {
		_, _, err = b.GitHub.Git.CreateRef(ctx, p.owner, p.repo, ref)
	}
	if err != nil {
		return "", fmt.Errorf("move %s: %w", p.branch, err)
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

// branchHead reads the head of the target's PR branch.
func (b *Bot) branchHead(ctx context.Context, p *poll) (string, bool) {
	ref, _, err := b.GitHub.Git.GetRef(ctx, p.owner, p.repo, "heads/"+p.branch)
	if err != nil {
		return "", false
	}
	return ref.GetObject().GetSHA(), true
}
