package ktree

import (
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/driftback/driftback/internal/repofs"
)

var (
	schemeRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*://`)
	// kustomize reads "user@host:path" (or user@host/path) as an scp-style
	// git URL only when a host and a path follow the user: a folder named
	// "v2@edge" fails its parse and is read from disk.
	scpRE = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9-]*@[^/:]+[:/].`)
	// A first segment like gitlab.com or git.example.org.
	hostRE = regexp.MustCompile(`^[a-zA-Z0-9-]+(\.[a-zA-Z0-9-]+)*\.[a-zA-Z]{2,}(:[0-9]+)?$`)
)

// surelyRemote reports entries kustomize hands to git or HTTP whatever the
// local tree holds: kustomize tries a git URL before a local folder, so even
// an existing folder named github.com/org/repo would be cloned.
func surelyRemote(e string) bool {
	l := strings.ToLower(e)
	return strings.HasPrefix(l, "git::") ||
		schemeRE.MatchString(e) ||
		scpRE.MatchString(e) ||
		strings.HasPrefix(l, "github.com/") || strings.HasPrefix(l, "github.com:")
}

// maybeRemote reports entries that name nothing in the repository and read
// like a remote reference, so the refusal says "remote" rather than "missing".
func maybeRemote(e string) bool {
	if strings.Contains(e, "?") || strings.Contains(e, "//") ||
		strings.HasSuffix(e, ".git") || strings.Contains(e, ".git/") || strings.Contains(e, "/_git/") {
		return true
	}
	first, rest, ok := strings.Cut(e, "/")
	return ok && rest != "" && hostRE.MatchString(first)
}

// localFile reports an scp-looking entry that names a file in the
// repository: kustomize reads a file before it tries a git URL (resources
// are tried as files first; patches and the like are only ever files).
func localFile(repo *repofs.Repo, dir, e string) bool {
	if !scpRE.MatchString(e) || schemeRE.MatchString(e) {
		return false
	}
	p, err := repofs.Join(dir, e)
	if err != nil {
		return false
	}
	_, ok := repo.Size(p)
	return ok
}

func isAbs(e string) bool {
	s := filepath.ToSlash(e)
	return path.IsAbs(s) || filepath.IsAbs(e)
}

// problem is why a path entry cannot be followed.
type problem struct {
	kind    string // goes into Feature: "remote", "absolute", "escape", "symlink", "missing"
	message string
	hint    string
}

// resolved is a path entry that names something inside the snapshot.
type resolved struct {
	path  string
	isDir bool
}

// resolve judges entry, written in the kustomization in dir.
func resolve(repo *repofs.Repo, dir, entry, what string) (resolved, *problem) {
	if entry == "" { // " " is a name a disk holds, and kustomize reads it
		return resolved{}, &problem{"empty", what + " is an empty path", "remove the empty entry"}
	}
	if surelyRemote(entry) && !localFile(repo, dir, entry) {
		return resolved{}, remoteProblem(what, entry)
	}
	if isAbs(entry) {
		return resolved{}, &problem{"absolute",
			what + " " + quote(entry) + " is an absolute path; driftback only reads files inside the repository",
			"use a path relative to " + dirName(dir)}
	}
	p, err := repofs.Join(dir, entry)
	if err != nil {
		return resolved{}, &problem{"escape",
			what + " " + quote(entry) + " climbs out of the repository",
			"keep every path inside the repository"}
	}
	if scope, inRemote := remoteRoot(dir); inRemote && !within(p, scope) {
		return resolved{}, &problem{"escape",
			what + " " + quote(entry) + " climbs out of the remote base it is written in",
			"keep every path of a remote base inside its repository"}
	} else if !inRemote && within(p, RemoteFolder) {
		return resolved{}, &problem{"reserved",
			what + " " + quote(entry) + " enters " + RemoteFolder + ", the folder driftback keeps fetched remote bases in",
			"name a remote base by its github.com URL with ?ref="}
	}
	// Walk the path as written, not as cleaned: on disk "a/.." leaves a
	// symlinked a through its target, while a lexical clean never enters it.
	cur := dir
	for _, seg := range strings.Split(filepath.ToSlash(entry), "/") {
		switch seg {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur)
			if cur == "." {
				cur = ""
			}
			continue
		}
		cur = path.Join(cur, seg)
		if link, ok := repo.Symlink(cur); ok {
			return resolved{}, symlinkProblem(what, entry, link)
		}
	}
	if link, ok := repo.Symlink(p); ok {
		return resolved{}, symlinkProblem(what, entry, link)
	}
	if _, ok := repo.Size(p); ok {
		return resolved{path: p}, nil
	}
	if repo.IsDir(p) {
		return resolved{path: p, isDir: true}, nil
	}
	if maybeRemote(entry) {
		return resolved{}, remoteProblem(what, entry)
	}
	return resolved{}, &problem{"missing",
		what + " " + quote(entry) + " names no file or folder in the repository (looked for " + quote(dirName(p)) + ")",
		"fix the path or add the missing file"}
}

func remoteProblem(what, entry string) *problem {
	hint := "vendor the remote content into the repository and point at the local copy"
	if !schemeRE.MatchString(entry) && !strings.HasPrefix(strings.ToLower(entry), "git::") {
		// kustomize reads "./github.com/org/repo" as a local folder.
		hint += "; if it is a local folder, write it as ./" + entry
	}
	return &problem{"remote",
		what + " " + quote(entry) + " is remote; driftback builds only from files in the repository, and kustomize would fetch it with git or HTTP",
		hint}
}

func symlinkProblem(what, entry, link string) *problem {
	return &problem{"symlink",
		what + " " + quote(entry) + " goes through the symlink " + quote(link) + "; driftback does not follow symlinks",
		"replace the symlink with the real file or folder, or point at its target directly"}
}

func quote(s string) string { return "\"" + s + "\"" }

func dirName(d string) string {
	if d == "" {
		return "the repository top"
	}
	return d
}

// within reports whether p is anc or below it.
func within(p, anc string) bool {
	return anc == "" || p == anc || strings.HasPrefix(p, anc+"/")
}
