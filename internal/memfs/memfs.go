package memfs

import (
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// FS is the filesystem. The zero value is not usable; call New.
type FS struct {
	mu   sync.RWMutex
	root *node
}

var _ filesys.FileSystem = (*FS)(nil)

// node is a file (children == nil) or a folder.
type node struct {
	name     string
	data     []byte
	children map[string]*node
}

func (n *node) isDir() bool { return n.children != nil }

// New returns an empty filesystem holding only "/".
func New() *FS { return &FS{root: &node{children: map[string]*node{}}} }

// abs cleans p lexically and anchors a relative path at "/", as kustomize's
// in-memory filesystem does. Without symlinks a lexical ".." is the one a
// disk would follow.
func abs(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	return path.Clean(p)
}

// parts splits a clean absolute path into its names ("/" has none).
func parts(p string) []string {
	if p == "/" {
		return nil
	}
	return strings.Split(p[1:], "/")
}

func validName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, "/\x00")
}

// find returns the node at p, or an error naming what is missing.
func (f *FS) find(op, p string) (*node, error) {
	if p == "" || strings.ContainsRune(p, 0) {
		return nil, &fs.PathError{Op: op, Path: p, Err: fs.ErrNotExist}
	}
	n := f.root
	for _, name := range parts(abs(p)) {
		if !n.isDir() {
			return nil, &fs.PathError{Op: op, Path: p, Err: errNotDir}
		}
		c, ok := n.children[name]
		if !ok {
			return nil, &fs.PathError{Op: op, Path: p, Err: fs.ErrNotExist}
		}
		n = c
	}
	return n, nil
}

var errNotDir = fmt.Errorf("not a directory")

// mkdirs makes every folder of p that is missing and returns the last.
func (f *FS) mkdirs(op, p string) (*node, error) {
	n := f.root
	for _, name := range parts(abs(p)) {
		if !validName(name) {
			return nil, &fs.PathError{Op: op, Path: p, Err: fs.ErrInvalid}
		}
		c, ok := n.children[name]
		if !ok {
			c = &node{name: name, children: map[string]*node{}}
			n.children[name] = c
		}
		if !c.isDir() {
			return nil, &fs.PathError{Op: op, Path: p, Err: errNotDir}
		}
		n = c
	}
	return n, nil
}

// put creates or truncates the file at p, making its folders as
// kustomize's in-memory filesystem does (a disk would want them first).
func (f *FS) put(op, p string, data []byte) (*node, error) {
	a := abs(p)
	if a == "/" {
		return nil, &fs.PathError{Op: op, Path: p, Err: fs.ErrInvalid}
	}
	dir, name := path.Split(a)
	if !validName(name) {
		return nil, &fs.PathError{Op: op, Path: p, Err: fs.ErrInvalid}
	}
	parent, err := f.mkdirs(op, dir)
	if err != nil {
		return nil, err
	}
	if c, ok := parent.children[name]; ok {
		if c.isDir() {
			return nil, &fs.PathError{Op: op, Path: p, Err: fmt.Errorf("is a directory")}
		}
		c.data = append([]byte(nil), data...)
		return c, nil
	}
	c := &node{name: name, data: append([]byte(nil), data...)}
	parent.children[name] = c
	return c, nil
}

// WriteFile stores data at p, replacing any file there.
func (f *FS) WriteFile(p string, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, err := f.put("write", p, data)
	return err
}

// Create makes an empty file at p and opens it for writing.
func (f *FS) Create(p string) (filesys.File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n, err := f.put("create", p, nil)
	if err != nil {
		return nil, err
	}
	return &file{fs: f, n: n, writable: true}, nil
}

// Mkdir makes the folder p; like MkdirAll, since kustomize's in-memory
// filesystem makes missing parents here too.
func (f *FS) Mkdir(p string) error { return f.MkdirAll(p) }

// MkdirAll makes the folder p and every missing parent.
func (f *FS) MkdirAll(p string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, err := f.mkdirs("mkdir", p)
	return err
}

// RemoveAll removes p and everything under it; a missing p is no error.
func (f *FS) RemoveAll(p string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := abs(p)
	if a == "/" {
		f.root.children = map[string]*node{}
		return nil
	}
	dir, name := path.Split(a)
	parent, err := f.find("remove", dir)
	if err != nil || !parent.isDir() {
		return nil
	}
	delete(parent.children, name)
	return nil
}

// Open opens p for reading.
func (f *FS) Open(p string) (filesys.File, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, err := f.find("open", p)
	if err != nil {
		return nil, err
	}
	return &file{fs: f, n: n}, nil
}

// IsDir reports whether p is a folder.
func (f *FS) IsDir(p string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, err := f.find("stat", p)
	return err == nil && n.isDir()
}

// Exists reports whether p is a file or a folder.
func (f *FS) Exists(p string) bool {
	f.mu.RLock()
	defer f.mu.RUnlock()
	_, err := f.find("stat", p)
	return err == nil
}

// ReadDir lists the names in folder p, sorted as os.ReadDir sorts them.
func (f *FS) ReadDir(p string) ([]string, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, err := f.find("readdir", p)
	if err != nil {
		return nil, err
	}
	if !n.isDir() {
		return nil, &fs.PathError{Op: "readdir", Path: p, Err: errNotDir}
	}
	return n.sortedNames(), nil
}

func (n *node) sortedNames() []string { return slices.Sorted(maps.Keys(n.children)) }

// ReadFile returns a copy of the file at p.
func (f *FS) ReadFile(p string) ([]byte, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, err := f.find("open", p)
	if err != nil {
		return nil, err
	}
	if n.isDir() {
		return nil, &fs.PathError{Op: "read", Path: p, Err: fmt.Errorf("is a directory")}
	}
	return append([]byte(nil), n.data...), nil
}

// CleanedAbs splits p into its folder and file name (empty for a folder),
// as the on-disk filesystem does; kustomize's loader checks its load
// restrictions against the folder this returns.
func (f *FS) CleanedAbs(p string) (filesys.ConfirmedDir, string, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n, err := f.find("lstat", p)
	if err != nil {
		return "", "", fmt.Errorf("evalsymlink failure on '%s' : %w", p, err)
	}
	a := abs(p)
	if n.isDir() {
		return filesys.ConfirmedDir(a), "", nil
	}
	return filesys.ConfirmedDir(path.Dir(a)), n.name, nil
}

// Glob returns the paths matching pattern as filepath.Glob would on disk,
// hidden ones left out unless the pattern's last name is hidden itself.
func (f *FS) Glob(pattern string) ([]string, error) {
	if _, err := filepath.Match(pattern, ""); err != nil {
		return nil, err
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	rel := !strings.HasPrefix(pattern, "/")
	var out []string
	var walk func(n *node, p string)
	walk = func(n *node, p string) {
		shown := p
		if rel {
			shown = strings.TrimPrefix(p, "/")
		}
		if p != "/" {
			if ok, _ := filepath.Match(pattern, shown); ok {
				out = append(out, shown)
			}
		}
		for _, name := range n.sortedNames() {
			walk(n.children[name], path.Join(p, name))
		}
	}
	walk(f.root, "/")
	if !filesys.IsHiddenFilePath(pattern) {
		out = filesys.RemoveHiddenFiles(out)
	}
	return out, nil
}

// Walk calls walkFn for p and everything under it in lexical order, with
// filepath.Walk's rules for SkipDir and SkipAll.
func (f *FS) Walk(p string, walkFn filepath.WalkFunc) error {
	f.mu.RLock()
	n, err := f.find("lstat", p)
	f.mu.RUnlock()
	if err != nil {
		return walkFn(p, nil, err)
	}
	err = f.walk(p, n, walkFn)
	if err == filepath.SkipDir || err == filepath.SkipAll {
		return nil
	}
	return err
}

func (f *FS) walk(p string, n *node, walkFn filepath.WalkFunc) error {
	if err := walkFn(p, n.info(), nil); err != nil || !n.isDir() {
		return err
	}
	f.mu.RLock()
	names := n.sortedNames()
	kids := make([]*node, len(names))
	for i, name := range names {
		kids[i] = n.children[name]
	}
	f.mu.RUnlock()
	for i, c := range kids {
		err := f.walk(filepath.Join(p, names[i]), c, walkFn)
		if err == filepath.SkipDir && !c.isDir() {
			return nil // a file's SkipDir skips the rest of its folder
		}
		if err != nil && err != filepath.SkipDir {
			return err
		}
	}
	return nil
}

func (n *node) info() os.FileInfo { return fileInfo{n: n} }

type fileInfo struct{ n *node }

func (i fileInfo) Name() string {
	if i.n.name == "" {
		return "/"
	}
	return i.n.name
}
func (i fileInfo) Size() int64 { return int64(len(i.n.data)) }
func (i fileInfo) Mode() fs.FileMode {
	if i.n.isDir() {
		return fs.ModeDir | 0o777
	}
	return 0o666
}
func (i fileInfo) ModTime() time.Time { return time.Time{} }
func (i fileInfo) IsDir() bool        { return i.n.isDir() }
func (i fileInfo) Sys() any           { return nil }

// file is an open file: reads from an offset, writes append.
type file struct {
	fs       *FS
	n        *node
	off      int
	writable bool
}

func (h *file) Read(b []byte) (int, error) {
	h.fs.mu.RLock()
	defer h.fs.mu.RUnlock()
	if h.n.isDir() {
		return 0, &fs.PathError{Op: "read", Path: h.n.name, Err: fmt.Errorf("is a directory")}
	}
	if h.off >= len(h.n.data) {
		return 0, io.EOF
	}
	c := copy(b, h.n.data[h.off:])
	h.off += c
	return c, nil
}

func (h *file) Write(b []byte) (int, error) {
	if !h.writable {
		return 0, &fs.PathError{Op: "write", Path: h.n.name, Err: fs.ErrPermission}
	}
	h.fs.mu.Lock()
	defer h.fs.mu.Unlock()
	h.n.data = append(h.n.data, b...)
	return len(b), nil
}

func (h *file) Close() error               { return nil }
func (h *file) Stat() (os.FileInfo, error) { return h.n.info(), nil }
