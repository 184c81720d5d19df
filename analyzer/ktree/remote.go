package ktree

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"sort"
	"strings"

	"github.com/driftback/driftback/internal/repofs"
)

// RemoteFolder is where a snapshot holds the files of the remote bases its
// caller fetched: RemoteFolder/github/<owner>/<repo>/<escaped ref>/…. The
// analyzer never fetches; Mount puts the files there and refuses a
// repository that already holds the folder, so a repository cannot pose as
// a remote base. Local paths may not enter it (resolve), and nothing under
// it is ever written (analyzer.unwritable).
const RemoteFolder = ".driftback-remote"

// Remote is a GitHub repository at a pinned ref, as a remote base names it.
// Owner and Repo are lower-cased: GitHub does not tell them apart by case.
type Remote struct {
	Owner, Repo, Ref string
}

// String is the remote as a kustomization could name it.
func (r Remote) String() string {
	return "github.com/" + r.Owner + "/" + r.Repo + "?ref=" + r.Ref
}

// Folder is where the snapshot holds the remote's files.
func (r Remote) Folder() string {
	return path.Join(RemoteFolder, "github", r.Owner, r.Repo, url.PathEscape(r.Ref))
}

var (
	ghNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	// A ref kustomize would hand to git: a branch, tag or commit. No
	// spaces, control characters or ".." (git refuses those in names).
	ghRefRE = regexp.MustCompile(`^[A-Za-z0-9_./+@-]+$`)
)

// ParseGitHub reads a resources entry written in one of the two forms
// kustomize accepts for GitHub: github.com/owner/repo[//path][?ref=R] and
// https://github.com/owner/repo[.git][//path][?ref=R] (a single slash
// before the path works too: for github.com the repository is always two
// segments). ok is false when the entry does not name GitHub that way; a
// non-nil problem says why a GitHub entry cannot be used (no pinned ref,
// options driftback cannot honour).
func ParseGitHub(entry string) (rem Remote, sub string, ok bool, p *problem) {
	rest, found := "", false
	for _, pre := range []string{"github.com/", "https://github.com/"} {
		if len(entry) >= len(pre) && strings.EqualFold(entry[:len(pre)], pre) {
			rest, found = entry[len(pre):], true
			break
		}
	}
	if !found {
		return Remote{}, "", false, nil
	}
	bad := func(kind, why, hint string) (Remote, string, bool, *problem) {
		return Remote{}, "", true, &problem{kind, "the remote base " + quote(entry) + " " + why, hint}
	}
	rest, query, _ := strings.Cut(rest, "?")
	q, err := url.ParseQuery(query)
	if err != nil {
		return bad("remote", "has a query driftback cannot read: "+err.Error(), "write it as github.com/owner/repo//path?ref=TAG")
	}
	ref := q.Get("ref")
	if ref == "" {
		ref = q.Get("version") // kustomize's older spelling of ref
	}
	for k := range q {
		if k != "ref" && k != "version" {
			return bad("remote", "sets "+quote(k)+", which driftback does not support for remote bases", "remove "+quote(k)+" from the URL")
		}
	}
	if len(q["ref"])+len(q["version"]) > 1 {
		return bad("remote", "names more than one ref", "keep one ?ref=")
	}
	repoPart, after, _ := strings.Cut(rest, "//")
	segs := strings.Split(repoPart, "/")
	if len(segs) < 2 {
		return bad("remote", "does not name an owner and a repository", "write it as github.com/owner/repo//path?ref=TAG")
	}
	owner, repo := segs[0], strings.TrimSuffix(segs[1], ".git")
	if !ghNameRE.MatchString(owner) || !ghNameRE.MatchString(repo) || repo == "." || repo == ".." {
		return bad("remote", "does not name a GitHub owner and repository", "write it as github.com/owner/repo//path?ref=TAG")
	}
	if ref == "" {
		return bad("remote-unpinned", "has no ?ref=, so it follows whatever the default branch holds when it is fetched; driftback builds remote bases only at a pinned ref",
			"pin it: add ?ref= with a tag or commit")
	}
	if !ghRefRE.MatchString(ref) || strings.Contains(ref, "..") || strings.HasPrefix(ref, "/") || strings.HasSuffix(ref, "/") {
		return bad("remote", "has a ref "+quote(ref)+" that is not a plain branch, tag or commit name", "pin it to a tag or commit")
	}
	sub, err = repofs.Clean(path.Join(strings.Join(segs[2:], "/"), after))
	if err != nil {
		return bad("remote", "names a path that leaves its repository", "name a folder inside the remote repository")
	}
	return Remote{Owner: strings.ToLower(owner), Repo: strings.ToLower(repo), Ref: ref}, sub, true, nil
}

// remoteRoot returns the mounted folder of the remote that holds p, if p
// lies under RemoteFolder.
func remoteRoot(p string) (string, bool) {
	if !within(p, RemoteFolder) {
		return "", false
	}
	segs := strings.SplitN(p, "/", 6)
	if len(segs) < 5 {
		return p, true
	}
	return strings.Join(segs[:5], "/"), true
}

// remoteBase resolves a resources entry that names a GitHub remote, from
// the kustomization in dir. ok is false when entry is not a GitHub remote.
func (l *loader) remoteBase(dir, entry, what string) (r resolved, rem Remote, p *problem, ok bool) {
	rem, sub, ok, p := ParseGitHub(entry)
	if !ok || p != nil {
		if p != nil {
			p.message = what + ": " + p.message
		}
		return resolved{}, rem, p, ok
	}
	if _, inRemote := remoteRoot(dir); inRemote {
		return resolved{}, rem, &problem{"remote (nested)",
			what + " " + quote(entry) + " is a remote base named inside another remote base; driftback fetches only the remote bases the repository names itself",
			"vendor the inner base, or name it from the repository"}, true
	}
	l.remotes[rem] = true
	folder := path.Join(rem.Folder(), sub)
	if !l.repo.IsDir(folder) {
		if !l.repo.IsDir(rem.Folder()) {
			return resolved{}, rem, &problem{"remote (not fetched)",
				what + " " + quote(entry) + " is a remote base whose files were not supplied: " + rem.String() + " was not fetched",
				"driftback plan: map it to a local checkout with --remote " + rem.String() + "=DIR"}, true
		}
		return resolved{}, rem, &problem{"remote (missing)",
			what + " " + quote(entry) + " names " + quote(sub) + ", which " + rem.String() + " does not hold as a folder",
			"point at a folder of the remote repository that holds a kustomization"}, true
	}
	return resolved{path: folder, isDir: true}, rem, nil, true
}

// Mount returns repo with each remote's files under its Folder. It refuses
// a repository that holds RemoteFolder itself: its files would pass for a
// fetched remote base.
func Mount(repo *repofs.Repo, remotes map[Remote]*repofs.Repo) (*repofs.Repo, error) {
	if _, isFile := repo.File(RemoteFolder); isFile || repo.IsDir(RemoteFolder) {
		return nil, fmt.Errorf("the repository holds %s, a name driftback reserves for remote bases", RemoteFolder)
	}
	if _, ok := repo.Symlink(RemoteFolder); ok {
		return nil, fmt.Errorf("the repository holds %s, a name driftback reserves for remote bases", RemoteFolder)
	}
	files := map[string][]byte{}
	for rem, files0 := range remotes {
		for _, p := range files0.Paths() {
			b, _ := files0.File(p)
			files[path.Join(rem.Folder(), p)] = append([]byte{}, b...) // nil would delete
		}
	}
	return repo.With(files)
}

// sortedRemotes is the set as a list, in String order.
func sortedRemotes(set map[Remote]bool) []Remote {
	out := make([]Remote, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// RemoteOf reads a path under RemoteFolder back as the remote that holds it
// and the path inside that remote's repository.
func RemoteOf(p string) (rem Remote, inside string, ok bool) {
	if !within(p, RemoteFolder) {
		return Remote{}, "", false
	}
	segs := strings.SplitN(p, "/", 6)
	if len(segs) < 5 || segs[1] != "github" {
		return Remote{}, p, true
	}
	ref, err := url.PathUnescape(segs[4])
	if err != nil {
		ref = segs[4]
	}
	if len(segs) == 6 {
		inside = segs[5]
	}
	return Remote{Owner: segs[2], Repo: segs[3], Ref: ref}, inside, true
}

// problem's message, for callers outside ktree that parse a remote.
func (p *problem) Message() string { return p.message }
