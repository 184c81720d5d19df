package commands

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/internal/repofs"
)

// stagedFile is one file of a plan on its way into the checkout.
type stagedFile struct {
	path   string // as the plan names it
	dst    string
	tmp    string // the new content, beside dst; "" for a deletion
	kept   string // the original, kept until every file is in place; "" when there was none
	placed bool   // dst holds the plan's content (or is gone, for a deletion)
}

// renameFile is os.Rename; a test makes one fail, as a file the user may
// not change (chattr +i, a read-only mount) does.
var renameFile = os.Rename

// writeFiles applies the plan to the checkout all or nothing. Every new
// content is first written beside its file; then each original is kept
// aside (a hard link, else a copy) and the new one renamed over it. Any
// failure puts every original back and removes every file and folder the
// write made, so the checkout is as it was. Each file written or deleted
// is named on out.
func writeFiles(dir string, files []analyzer.File, out io.Writer) (err error) {
	var staged []*stagedFile
	var made []string // folders created for new files, outermost first
	defer func() {
		if err != nil {
			restore(staged, made)
		}
	}()
	for _, f := range files {
		s, dirs, err := stage(dir, f)
		made = append(made, dirs...)
		if err != nil {
			return err
		}
		staged = append(staged, s)
	}
	for _, s := range staged {
		if err := place(s); err != nil {
			return fmt.Errorf("write %s: %w; nothing was changed", s.path, bare(err))
		}
	}
	for _, s := range staged {
		if s.kept != "" {
			os.Remove(s.kept)
		}
		if s.tmp == "" {
			fmt.Fprintf(out, "deleted %s\n", s.path)
		} else {
			fmt.Fprintf(out, "wrote %s\n", s.path)
		}
	}
	return nil
}

// stage checks one file's path and writes its new content beside it,
// creating the folders it needs (returned, to be removed on failure).
func stage(dir string, f analyzer.File) (*stagedFile, []string, error) {
	rel, err := repofs.Clean(f.Path)
	if err != nil || rel == "" {
		return nil, nil, fmt.Errorf("refusing to write %q: %v; nothing was changed", f.Path, err)
	}
	s := &stagedFile{path: f.Path, dst: filepath.Join(dir, filepath.FromSlash(rel))}
	if info, err := os.Lstat(s.dst); err == nil && info.Mode()&os.ModeSymlink != 0 {
		return nil, nil, fmt.Errorf("refusing to write through the symlink %s; nothing was changed", f.Path)
	}
	if f.Deleted {
		return s, nil, nil
	}
	made, err := mkdirs(dir, filepath.Dir(s.dst))
	if err != nil {
		return nil, made, fmt.Errorf("write %s: %w; nothing was changed", f.Path, bare(err))
	}
	mode := os.FileMode(0o644)
	if info, err := os.Stat(s.dst); err == nil {
		mode = info.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.dst), ".driftback-*")
	if err != nil {
		return nil, made, fmt.Errorf("write %s: cannot create a file beside it: %w; nothing was changed", f.Path, bare(err))
	}
	s.tmp = tmp.Name()
	_, werr := tmp.WriteString(f.Content)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(s.tmp, mode)
	}
	if werr != nil {
		os.Remove(s.tmp)
		return nil, made, fmt.Errorf("write %s: %w; nothing was changed", f.Path, bare(werr))
	}
	return s, made, nil
}

// mkdirs creates folder and the missing folders above it (up to root),
// returning those it created, outermost first.
func mkdirs(root, folder string) ([]string, error) {
	var missing []string
	for d := folder; d != root && d != filepath.Dir(d); d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil {
			break
		}
		missing = append([]string{d}, missing...)
	}
	var made []string
	for _, d := range missing {
		if err := os.Mkdir(d, 0o755); err != nil {
			return made, err
		}
		made = append(made, d)
	}
	return made, nil
}

// place keeps the original aside and puts the new content (or, for a
// deletion, nothing) where it was.
func place(s *stagedFile) error {
	if _, err := os.Lstat(s.dst); err == nil {
		kept, err := keepAside(s.dst)
		if err != nil {
			return err
		}
		s.kept = kept
	} else if s.tmp == "" {
		return nil // deleting what is not there
	}
	if s.tmp == "" {
		if err := os.Remove(s.dst); err != nil {
			return err
		}
	} else if err := renameFile(s.tmp, s.dst); err != nil {
		return err
	}
	s.placed = true
	return nil
}

// keepAside makes a second name for path's content, beside it: a hard
// link where the filesystem has them, else a copy with its mode.
func keepAside(path string) (string, error) {
	f, err := os.CreateTemp(filepath.Dir(path), ".driftback-orig-*")
	if err != nil {
		return "", err
	}
	kept := f.Name()
	f.Close()
	os.Remove(kept)
	if os.Link(path, kept) == nil {
		return kept, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	info, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(kept, b, info.Mode().Perm()); err != nil {
		os.Remove(kept)
		return "", err
	}
	return kept, nil
}

// restore undoes a write that failed: originals back, new files and
// temporary files removed, created folders removed (innermost first).
func restore(staged []*stagedFile, made []string) {
	for i := len(staged) - 1; i >= 0; i-- {
		s := staged[i]
		switch {
		case s.kept != "" && s.placed:
			os.Rename(s.kept, s.dst) // the original back
		case s.kept != "":
			os.Remove(s.kept) // the original was never replaced
		case s.placed && s.tmp != "":
			os.Remove(s.dst) // a file the plan added
		}
		if s.tmp != "" && !s.placed {
			os.Remove(s.tmp)
		}
	}
	for i := len(made) - 1; i >= 0; i-- {
		os.Remove(made[i])
	}
}

// bare is an error without the path of a file the user never asked about
// (the temporary file beside the one being written).
func bare(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}
