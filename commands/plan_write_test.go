package commands

import (
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/driftback/driftback/analyzer"
)

// checkoutFiles is every file under dir, path → content.
func checkoutFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func writeCase(t *testing.T) (string, []analyzer.File) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"a.yaml": "a: 1\n", "b.yaml": "b: 1\n", "d.yaml": "d: 1\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	return dir, []analyzer.File{
		{Path: "a.yaml", Content: "a: 2\n"},
		{Path: "new/deep/c.yaml", Content: "c: 2\n"},
		{Path: "b.yaml", Content: "b: 2\n"},
		{Path: "d.yaml", Deleted: true},
	}
}

// Issue 55, item 2: `plan --write` is all files or none. A file that
// cannot be replaced (chattr +i, a read-only mount: here its rename fails)
// leaves every file as it was, no temporary file and no new folder, and
// the error names the file being written, not a temporary one.
func TestWriteIsAllOrNothing(t *testing.T) {
	dir, files := writeCase(t)
	before := checkoutFiles(t, dir)
	renameFile = func(from, to string) error {
		if filepath.Base(to) == "b.yaml" {
			return &os.LinkError{Op: "rename", Old: from, New: to, Err: syscall.EPERM}
		}
		return os.Rename(from, to)
	}
	defer func() { renameFile = os.Rename }()
	var out strings.Builder
	err := writeFiles(dir, files, &out)
	if err == nil {
		t.Fatal("the write succeeded though b.yaml could not be replaced")
	}
	if msg := err.Error(); !strings.Contains(msg, "b.yaml") || strings.Contains(msg, ".driftback") || !errors.Is(err, syscall.EPERM) {
		t.Errorf("error %q: want it to name b.yaml, not a temporary file, and say why", msg)
	}
	if after := checkoutFiles(t, dir); !maps.Equal(before, after) {
		t.Errorf("the checkout changed: before %v, after %v", before, after)
	}
	if _, err := os.Stat(filepath.Join(dir, "new")); err == nil {
		t.Error("the folder made for the new file is left")
	}
	if out.Len() != 0 {
		t.Errorf("a failed write said it wrote: %q", out.String())
	}
	if info, _ := os.Stat(filepath.Join(dir, "a.yaml")); info.Mode().Perm() != 0o640 {
		t.Errorf("a.yaml's mode is %v after the restore", info.Mode().Perm())
	}
}

// A file that cannot even be staged (its folder is a file) changes
// nothing either.
func TestWriteThatCannotStageChangesNothing(t *testing.T) {
	dir, files := writeCase(t)
	files = append(files, analyzer.File{Path: "a.yaml/x.yaml", Content: "x: 1\n"})
	before := checkoutFiles(t, dir)
	err := writeFiles(dir, files, &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), "a.yaml/x.yaml") {
		t.Fatalf("error %v: want it to name a.yaml/x.yaml", err)
	}
	if after := checkoutFiles(t, dir); !maps.Equal(before, after) {
		t.Errorf("the checkout changed: before %v, after %v", before, after)
	}
}

// A write that succeeds says what it wrote and deleted, keeps each
// file's mode and leaves nothing beside the files.
func TestWriteSaysWhatItWrote(t *testing.T) {
	dir, files := writeCase(t)
	var out strings.Builder
	if err := writeFiles(dir, files, &out); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a.yaml": "a: 2\n", "b.yaml": "b: 2\n", "new/deep/c.yaml": "c: 2\n"}
	if got := checkoutFiles(t, dir); !maps.Equal(got, want) {
		t.Errorf("checkout %v, want %v", got, want)
	}
	if got := out.String(); got != "wrote a.yaml\nwrote new/deep/c.yaml\nwrote b.yaml\ndeleted d.yaml\n" {
		t.Errorf("said %q", got)
	}
	if info, _ := os.Stat(filepath.Join(dir, "a.yaml")); info.Mode().Perm() != 0o640 {
		t.Errorf("a.yaml's mode is %v, want 0640 as before", info.Mode().Perm())
	}
}
