package commands

import (
	"fmt"
	"sort"
	"strings"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/internal/repofs"
)

// remoteFlags is plan's repeatable --remote URL=DIR: a local checkout that
// stands for a GitHub remote base at its pinned ref, since plan fetches
// nothing. URL is written as the kustomization writes it, without a path
// (github.com/org/repo?ref=v1 or https://github.com/org/repo?ref=v1); the
// ref holds no "=", so the last "=" splits off DIR.
type remoteFlags map[analyzer.Remote]string

func (r remoteFlags) String() string {
	var out []string
	for rem, dir := range r {
		out = append(out, rem.String()+"="+dir)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// Type names the flag's value in --help.
func (r remoteFlags) Type() string { return "URL=DIR" }

func (r remoteFlags) Set(v string) error {
	i := strings.LastIndexByte(v, '=')
	if i <= 0 || i == len(v)-1 {
		return fmt.Errorf("want URL=DIR, as in github.com/org/repo?ref=v1=../repo")
	}
	rem, sub, ok, err := analyzer.ParseRemote(v[:i])
	switch {
	case !ok:
		return fmt.Errorf("%q is not a GitHub remote (github.com/org/repo?ref=… or https://github.com/org/repo?ref=…)", v[:i])
	case err != nil:
		return err
	case sub != "":
		return fmt.Errorf("%q names a folder; map the whole repository, without //%s", v[:i], sub)
	}
	if _, dup := r[rem]; dup {
		return fmt.Errorf("%s is mapped twice", rem)
	}
	r[rem] = v[i+1:]
	return nil
}

// mountRemotes reads each mapped checkout and mounts it into repo where the
// build reads remote bases. A checkout holding the reserved folder itself is
// refused, mapped remotes or not.
func mountRemotes(repo *repofs.Repo, remotes remoteFlags) (*repofs.Repo, error) {
	files := map[analyzer.Remote]*repofs.Repo{}
	for rem, dir := range remotes {
		r, err := repofs.LoadDir(dir, 0)
		if err != nil {
			return nil, fmt.Errorf("--remote %s: %w", rem, err)
		}
		files[rem] = r
	}
	return analyzer.MountRemotes(repo, files)
}
