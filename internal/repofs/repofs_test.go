package repofs

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestCleanRejectsEscapes(t *testing.T) {
	for _, bad := range []string{"../x", "a/../../x", "/etc/passwd", "..", "a/\x00b"} {
		if _, err := Clean(bad); err == nil {
			t.Errorf("Clean(%q) accepted a hostile path", bad)
		}
	}
	for in, want := range map[string]string{"a/./b": "a/b", "a/b/../c": "a/c", ".": "", "a/": "a"} {
		got, err := Clean(in)
		if err != nil || got != want {
			t.Errorf("Clean(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := Join("base", "../../x"); err == nil {
		t.Error("Join let a path climb out of the repository")
	}
}

func TestListAndWith(t *testing.T) {
	r := New()
	for _, p := range []string{"base/a.yaml", "base/sub/b.yaml", "top.yaml"} {
		if err := r.Add(p, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	if got := r.List("base"); !reflect.DeepEqual(got, []string{"a.yaml", "sub/"}) {
		t.Errorf("List(base) = %v", got)
	}
	if !r.IsDir("base/sub") || r.IsDir("top.yaml") {
		t.Error("IsDir is wrong")
	}
	e, err := r.With(map[string][]byte{"base/a.yaml": []byte("new"), "top.yaml": nil})
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := e.File("base/a.yaml"); string(b) != "new" {
		t.Errorf("With did not replace: %q", b)
	}
	if _, ok := e.File("top.yaml"); ok {
		t.Error("With did not delete")
	}
	if b, _ := r.File("base/a.yaml"); string(b) != "base/a.yaml" {
		t.Error("With changed the original snapshot")
	}
}

func TestLoadDirRecordsSymlinksAndSkipsGit(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, ".git"), 0o755))
	must(os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("ref"), 0o644))
	must(os.MkdirAll(filepath.Join(dir, "app"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "app", "d.yaml"), []byte("kind: X"), 0o644))
	must(os.Symlink("/etc", filepath.Join(dir, "app", "escape")))
	r, err := LoadDir(dir, 0)
	must(err)
	if got := r.Paths(); !reflect.DeepEqual(got, []string{"app/d.yaml"}) {
		t.Errorf("Paths = %v", got)
	}
	if l, ok := r.Symlink("app/escape/passwd"); !ok || l != "app/escape" {
		t.Errorf("Symlink = %q, %v", l, ok)
	}
	if _, err := LoadDir(dir, 3); err == nil {
		t.Error("size cap not enforced")
	}
	fsys, err := r.FS()
	must(err)
	if b, err := fsys.ReadFile("/app/d.yaml"); err != nil || string(b) != "kind: X" {
		t.Errorf("FS read = %q, %v", b, err)
	}
}

// A file kept by its size alone exists and is listed, but no reader gets
// bytes for it: not File, not Paths, not the build filesystem.
func TestUnkeptFileHasASizeAndNoBytes(t *testing.T) {
	r := New()
	if err := r.Add("app/c.yaml", []byte("a: 1\n")); err != nil {
		t.Fatal(err)
	}
	if err := r.AddUnkept("app/big.bin", 50<<20); err != nil {
		t.Fatal(err)
	}
	if n, ok := r.Size("app/big.bin"); !ok || n != 50<<20 {
		t.Fatalf("Size = %d, %v", n, ok)
	}
	if _, ok := r.File("app/big.bin"); ok {
		t.Fatal("File returned bytes of an unkept file")
	}
	if got := strings.Join(r.List("app"), " "); got != "big.bin c.yaml" {
		t.Fatalf("List = %q", got)
	}
	if got := strings.Join(r.Paths(), " "); got != "app/c.yaml" || r.Bytes() != 5 {
		t.Fatalf("Paths = %q, Bytes = %d", got, r.Bytes())
	}
	fs, err := r.FS()
	if err != nil {
		t.Fatal(err)
	}
	if fs.Exists("/app/big.bin") {
		t.Fatal("the build filesystem holds the unkept file")
	}
	w, err := r.With(map[string][]byte{"app/c.yaml": []byte("a: 2\n")})
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := w.Size("app/big.bin"); !ok || n != 50<<20 {
		t.Fatal("With lost the unkept file")
	}
	if err := w.Add("app/big.bin", []byte("small now\n")); err != nil {
		t.Fatal(err)
	}
	if b, ok := w.File("app/big.bin"); !ok || string(b) != "small now\n" {
		t.Fatal("adding the file's bytes did not replace the record")
	}
}
