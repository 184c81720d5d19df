package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/bot/discover"
	"github.com/driftback/driftback/internal/repofs"
)

// checkout is a local clone standing in for GitHub in plan --config: its
// working tree is the base branch head, and the revision a GitOps tool
// applied is read from its git objects (in process; git is never run).
type checkout struct {
	dir  string
	work *repofs.Repo
	base string // the checked-out commit; "" when dir is no git repository
	git  *git.Repository
	snap map[string]*analyzer.Snapshot
	// remotes are the GitHub remote bases mapped with --remote, mounted
	// into every revision read.
	remotes remoteFlags
}

func openCheckout(dir string, remotes remoteFlags) (*checkout, error) {
	work, err := repofs.LoadDir(dir, 0)
	if err == nil {
		work, err = mountRemotes(work, remotes)
	}
	if err != nil {
		return nil, err
	}
	c := &checkout{dir: dir, work: work, snap: map[string]*analyzer.Snapshot{}, remotes: remotes}
	c.git, err = git.PlainOpen(dir)
	if err == nil {
		if head, herr := c.git.Head(); herr == nil {
			c.base = head.Hash().String()
		}
	} else if !errors.Is(err, git.ErrRepositoryNotExists) {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	c.snap[c.base] = analyzer.NewSnapshot(work, nil)
	return c, nil
}

// load is targetplan.Input.Load: the working tree for the base, any other
// revision from the repository's history.
func (c *checkout) load(_ context.Context, rev string) (*analyzer.Snapshot, error) {
	if s, ok := c.snap[rev]; ok {
		return s, nil
	}
	if c.git == nil {
		return nil, fmt.Errorf("the cluster runs %s, and %s is not a git checkout to read it from; plan in a clone", short(rev), c.dir)
	}
	commit, err := c.git.CommitObject(plumbing.NewHash(rev))
	if err != nil {
		return nil, fmt.Errorf("the cluster runs %s, which the checkout %s does not have (git fetch?): %w", short(rev), c.dir, err)
	}
	files, err := commit.Files()
	if err != nil {
		return nil, err
	}
	repo := repofs.New()
	var total int64
	err = files.ForEach(func(f *object.File) error {
		if total += f.Size; total > repofs.DefaultMaxBytes {
			return fmt.Errorf("%s at %s: larger than %d bytes", c.dir, short(rev), repofs.DefaultMaxBytes)
		}
		if f.Mode != filemode.Symlink {
			r, err := f.Reader()
			if err != nil {
				return err
			}
			defer r.Close()
			b, err := io.ReadAll(r)
			if err != nil {
				return err
			}
			return repo.Add(f.Name, b)
		}
		return repo.AddSymlink(f.Name, "")
	})
	if err == nil {
		repo, err = mountRemotes(repo, c.remotes)
	}
	if err != nil {
		return nil, err
	}
	s := analyzer.NewSnapshot(repo, nil)
	c.snap[rev] = s
	return s, nil
}

// branch is the checked-out branch, and the repository's default branch
// as the clone's origin/HEAD names it; "" where they cannot be told (a
// detached HEAD, no origin/HEAD).
func (c *checkout) branch() (current, fallback string) {
	if c.git == nil {
		return "", ""
	}
	if head, err := c.git.Head(); err == nil && head.Name().IsBranch() {
		current = head.Name().Short()
	}
	if ref, err := c.git.Reference(plumbing.NewRemoteHEADReferenceName("origin"), false); err == nil && ref.Type() == plumbing.SymbolicReference {
		fallback = strings.TrimPrefix(ref.Target().String(), "refs/remotes/origin/")
	}
	return current, fallback
}

// repos are the GitHub repositories (owner/name) on host that the
// checkout's git remotes name.
func (c *checkout) repos(host string) []string {
	if c.git == nil {
		return nil
	}
	remotes, err := c.git.Remotes()
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range remotes {
		for _, u := range r.Config().URLs {
			if repo, ok := discover.RepoOfGitURL(u, host); ok && !slices.Contains(out, repo) {
				out = append(out, repo)
			}
		}
	}
	return out
}

func short(sha string) string {
	if len(sha) > 7 {
		return sha[:7]
	}
	return sha
}
