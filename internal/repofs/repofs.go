package repofs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/driftback/driftback/internal/memfs"
)

// DefaultMaxBytes caps what LoadDir reads, so a hostile checkout cannot
// exhaust memory.
const DefaultMaxBytes = 256 << 20

// Repo is a snapshot: files by path, and symlinks (recorded, never followed).
// A file too large for any build to read may be recorded by its size alone
// (AddUnkept): it exists, but its bytes are not held.
type Repo struct {
	files  map[string][]byte
	unkept map[string]int64 // sizes of the files whose bytes are not held
	links  map[string]string
	dirs   map[string]bool
	layer  // what a Repo made by With shows of the one it was made from
}

// New returns an empty snapshot.
func New() *Repo {
	return &Repo{files: map[string][]byte{}, unkept: map[string]int64{}, links: map[string]string{}, dirs: map[string]bool{"": true}}
}

// Clean turns a repo-relative path into its canonical form ("" is the repo
// top). Absolute paths and paths that climb out of the repository are errors;
// "C:x" is a plain name on the Linux disks kustomize builds from.
func Clean(rel string) (string, error) {
	if strings.ContainsRune(rel, 0) {
		return "", fmt.Errorf("path %q holds a NUL byte", rel)
	}
	s := filepath.ToSlash(rel)
	if path.IsAbs(s) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("path %q is absolute; paths are relative to the repository", rel)
	}
	c := path.Clean(s)
	if c == "." {
		return "", nil
	}
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path %q escapes the repository", rel)
	}
	return c, nil
}

// Join resolves rel against the repo directory dir, rejecting escapes.
func Join(dir, rel string) (string, error) {
	if path.IsAbs(filepath.ToSlash(rel)) {
		return "", fmt.Errorf("path %q is absolute; paths are relative to the repository", rel)
	}
	return Clean(path.Join(dir, filepath.ToSlash(rel)))
}

// Add stores a file. Its parent folders come into being implicitly. For a
// Repo being built: a Repo made from r by With reads r's maps, and would
// show the file too.
func (r *Repo) Add(p string, data []byte) error {
	c, err := Clean(p)
	if err != nil {
		return err
	}
	if c == "" || r.isDir(c) {
		return fmt.Errorf("path %q is a folder", p)
	}
	r.files[c] = data
	delete(r.unkept, c)
	r.hide(&r.hideUnkept, c)
	r.addDirs(c)
	return nil
}

// AddUnkept records a file by its size alone, for a file larger than any
// build may read: it is listed and has a Size, but File does not return it
// and FS leaves it out, so nothing can read it as empty.
func (r *Repo) AddUnkept(p string, size int64) error {
	c, err := Clean(p)
	if err != nil {
		return err
	}
	if c == "" || r.isDir(c) {
		return fmt.Errorf("path %q is a folder", p)
	}
	delete(r.files, c)
	r.hide(&r.hideFile, c)
	r.unkept[c] = size
	r.addDirs(c)
	return nil
}

// addDirs brings the folders above the file c into being.
func (r *Repo) addDirs(c string) {
	for d := path.Dir(c); ; d = path.Dir(d) {
		if d == "." {
			break
		}
		r.dirs[d] = true
	}
}

// Size is the size of file p, whether or not its bytes are kept; false
// when p is not a file.
func (r *Repo) Size(p string) (int64, bool) {
	c, err := Clean(p)
	if err != nil {
		return 0, false
	}
	if b, ok := r.file(c); ok {
		return int64(len(b)), true
	}
	return r.unkeptSize(c)
}

// Bytes is the size of the kept files together.
func (r *Repo) Bytes() int64 {
	var n int64
	r.eachFile(func(_ string, b []byte) { n += int64(len(b)) })
	return n
}

// AddSymlink records a symlink so that a build that reaches it is refused.
func (r *Repo) AddSymlink(p, target string) error {
	c, err := Clean(p)
	if err != nil {
		return err
	}
	r.links[c] = target
	return nil
}

// File returns a file's bytes; false for a file whose bytes are not kept.
func (r *Repo) File(p string) ([]byte, bool) {
	c, err := Clean(p)
	if err != nil {
		return nil, false
	}
	return r.file(c)
}

// IsDir reports whether p is a folder that holds files.
func (r *Repo) IsDir(p string) bool {
	c, err := Clean(p)
	return err == nil && r.isDir(c)
}

// Symlink reports whether p, or a folder above it, is a symlink, and names it.
func (r *Repo) Symlink(p string) (string, bool) {
	c, err := Clean(p)
	if err != nil {
		return "", false
	}
	for d := c; d != "." && d != ""; d = path.Dir(d) {
		if _, ok := r.link(d); ok {
			return d, true
		}
	}
	return "", false
}

// List returns the direct entries of folder dir: files and subfolders (with a
// trailing slash), sorted.
func (r *Repo) List(dir string) []string {
	c, err := Clean(dir)
	if err != nil {
		return nil
	}
	seen := map[string]bool{}
	var out []string
	add := func(name string) {
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	file := func(p string) {
		if rest, ok := under(c, p); ok {
			if i := strings.IndexByte(rest, '/'); i >= 0 {
				add(rest[:i+1])
			} else {
				add(rest)
			}
		}
	}
	r.eachFile(func(p string, _ []byte) { file(p) })
	r.eachUnkept(func(p string, _ int64) { file(p) })
	r.eachLink(func(p, _ string) {
		if rest, ok := under(c, p); ok && !strings.Contains(rest, "/") {
			add(rest)
		}
	})
	sort.Strings(out)
	return out
}

func under(dir, p string) (string, bool) {
	if dir == "" {
		return p, true
	}
	if strings.HasPrefix(p, dir+"/") {
		return p[len(dir)+1:], true
	}
	return "", false
}

// Retain drops every file with bytes that keep refuses (their folders
// stay; files kept by size alone cost nothing and stay too). For a
// snapshot being prepared, before anyone reads it. It makes r's maps anew
// rather than deleting from them, so a Repo already made from r by With,
// which reads r's maps, keeps showing what it showed.
func (r *Repo) Retain(keep func(p string) bool) {
	r.flatten()
	files := make(map[string][]byte, len(r.files))
	for p, b := range r.files {
		if keep(p) {
			files[p] = b
		}
	}
	r.files = files
}

// Paths returns the path of every file whose bytes are kept, sorted.
func (r *Repo) Paths() []string {
	out := make([]string, 0, len(r.files))
	r.eachFile(func(p string, _ []byte) { out = append(out, p) })
	sort.Strings(out)
	return out
}

// With returns a new snapshot with the given files replaced (nil content
// deletes). The receiver is unchanged, so verify can build an edited tree
// beside the original; it must not change while the new one is in use,
// which holds only the changes and shows the receiver through.
func (r *Repo) With(changes map[string][]byte) (*Repo, error) {
	out := r.over()
	for p := range changes {
		// The receiver's file or size-only record at a changed path (as
		// given) does not show through.
		out.hide(&out.hideFile, p)
		out.hide(&out.hideUnkept, p)
	}
	for p, b := range changes {
		if b == nil {
			c, err := Clean(p)
			if err != nil {
				return nil, err
			}
			delete(out.files, c)
			out.hide(&out.hideFile, c)
			continue
		}
		if err := out.Add(p, b); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// FS returns an in-memory filesystem holding every file under "/" (any
// name a disk holds; see memfs).
// Symlinks are absent from it: the loader refuses them before any build.
func (r *Repo) FS() (filesys.FileSystem, error) {
	mem := memfs.New()
	for _, p := range r.Paths() {
		b, _ := r.file(p)
		if err := mem.WriteFile("/"+p, b); err != nil {
			return nil, fmt.Errorf("load %s into memory: %w", p, err)
		}
	}
	return mem, nil
}

// LoadDir snapshots a checkout on disk. The .git folder is skipped; symlinks
// are recorded, not followed; the total size is capped at maxBytes (0 means
// DefaultMaxBytes).
func LoadDir(dir string, maxBytes int64) (*Repo, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("repository %s: %w", dir, err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("repository %s: not a folder", dir)
	}
	r := New()
	var total int64
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return r.AddSymlink(rel, target)
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			total += info.Size()
			if total > maxBytes {
				return fmt.Errorf("repository %s is larger than %d bytes", dir, maxBytes)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return r.Add(rel, b)
		default:
			return nil // sockets, devices: never part of a build
		}
	})
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("repository %s: %w", dir, err)
		}
		return nil, err
	}
	return r, nil
}
