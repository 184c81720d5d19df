package memfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

var tree = map[string]string{
	"ha-1.21+/kustomization.yaml": "a",
	"ha-1.21+/deploy.yaml":        "bb",
	"v2@edge/team a/x.yaml":       "ccc",
	"ünïcode/.hidden/y.yaml":      "d",
	"a..b/#c;d,e=f~g":             "",
	".top":                        "e",
	"plain/kustomization.yaml":    "f",
}

// both writes the tree to a disk folder and to an FS.
func both(t *testing.T) (disk string, mem *FS) {
	t.Helper()
	disk = t.TempDir()
	mem = New()
	for p, body := range tree {
		full := filepath.Join(disk, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := mem.WriteFile("/"+p, []byte(body)); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	return disk, mem
}

// Every read kustomize makes answers as the on-disk filesystem does, for
// names kustomize's own in-memory filesystem refuses to create.
func TestReadsAnswerAsOnDisk(t *testing.T) {
	diskDir, mem := both(t)
	disk := filesys.MakeFsOnDisk()
	strip := func(s string) string { return strings.TrimPrefix(s, diskDir) }
	queries := []string{"", "ha-1.21+", "ha-1.21+/deploy.yaml", "ha-1.21+/../v2@edge/team a", "v2@edge/team a/x.yaml",
		"ünïcode/.hidden", "a..b/#c;d,e=f~g", "missing", "ha-1.21+/deploy.yaml/x", ".top", "plain/./kustomization.yaml"}
	for _, q := range queries {
		d, m := filepath.Join(diskDir, q), "/"+q
		if a, b := disk.Exists(d), mem.Exists(m); a != b {
			t.Errorf("Exists(%q): disk %v, memory %v", q, a, b)
		}
		if a, b := disk.IsDir(d), mem.IsDir(m); a != b {
			t.Errorf("IsDir(%q): disk %v, memory %v", q, a, b)
		}
		da, de := disk.ReadDir(d)
		ma, me := mem.ReadDir(m)
		if (de == nil) != (me == nil) || (de == nil && !reflect.DeepEqual(da, ma)) {
			t.Errorf("ReadDir(%q): disk %q %v, memory %q %v", q, da, de, ma, me)
		}
		db, de := disk.ReadFile(d)
		mb, me := mem.ReadFile(m)
		if (de == nil) != (me == nil) || string(db) != string(mb) {
			t.Errorf("ReadFile(%q): disk %q %v, memory %q %v", q, db, de, mb, me)
		}
		if me != nil && q != "" && !mem.IsDir(m) && !errors.Is(me, fs.ErrNotExist) && !strings.Contains(me.Error(), "not a directory") {
			t.Errorf("ReadFile(%q) error %v is neither missing nor not-a-directory", q, me)
		}
		dd, df, de := disk.CleanedAbs(d)
		md, mf, me := mem.CleanedAbs(m)
		if (de == nil) != (me == nil) || (de == nil && (strip(string(dd)) != strings.TrimSuffix(string(md), "/") || df != mf)) {
			t.Errorf("CleanedAbs(%q): disk %q %q %v, memory %q %q %v", q, dd, df, de, md, mf, me)
		}
	}
	for _, pat := range []string{"*", "*/*", "*/*.yaml", "ünïcode/.*", "ünïcode/.*/*", "v2@edge/team ?/*", "[a-h]*/*", ".*"} {
		dg, de := disk.Glob(filepath.Join(diskDir, pat))
		mg, me := mem.Glob("/" + pat)
		for i := range dg {
			dg[i] = strip(dg[i])
		}
		if de != nil || me != nil || !reflect.DeepEqual(dg, mg) {
			t.Errorf("Glob(%q): disk %q %v, memory %q %v", pat, dg, de, mg, me)
		}
	}
	if _, err := mem.Glob("/["); err == nil {
		t.Error("a bad pattern is no error")
	}
	walk := func(fsys filesys.FileSystem, root, prefix string) []string {
		var out []string
		err := fsys.Walk(root, func(p string, info fs.FileInfo, err error) error {
			if err != nil {
				return err
			}
			if p = strings.TrimPrefix(p, prefix); info.IsDir() && p != "/" {
				p += "/"
			}
			out = append(out, p)
			if info.IsDir() && info.Name() == ".hidden" {
				return filepath.SkipDir
			}
			if info.Name() == "deploy.yaml" {
				return filepath.SkipDir // the rest of ha-1.21+ is skipped
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if a, b := walk(disk, diskDir, diskDir), walk(mem, "/", ""); !reflect.DeepEqual(a[1:], b[1:]) || a[0] != "/" || b[0] != "/" {
		t.Errorf("Walk: disk %q, memory %q", a, b)
	}
}

// Writes keep what they were given, make missing folders, and refuse to
// put a file where a folder is (or under a file).
func TestWritesAndFiles(t *testing.T) {
	m := New()
	data := []byte("x: 1\n")
	if err := m.WriteFile("team a/k.yaml", data); err != nil {
		t.Fatal(err)
	}
	data[0] = 'y'
	if b, _ := m.ReadFile("/team a/k.yaml"); string(b) != "x: 1\n" {
		t.Errorf("the stored file changed with the caller's slice: %q", b)
	}
	if err := m.WriteFile("/team a", nil); err == nil {
		t.Error("a file written over a folder")
	}
	if err := m.WriteFile("/team a/k.yaml/z", nil); err == nil {
		t.Error("a file written under a file")
	}
	if err := m.WriteFile("/", nil); err == nil {
		t.Error("a file written at /")
	}
	f, err := m.Create("/new+/f")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f, "ab"); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(f, "c"); err != nil {
		t.Fatal(err)
	}
	if st, _ := f.Stat(); st.Size() != 3 || st.Name() != "f" || st.IsDir() {
		t.Errorf("stat %v", st)
	}
	r, err := m.Open("/new+/f")
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := io.ReadAll(r); string(b) != "abc" {
		t.Errorf("read %q", b)
	}
	if _, err := r.Write([]byte("x")); err == nil {
		t.Error("an opened file is writable")
	}
	if err := m.RemoveAll("/new+"); err != nil || m.Exists("/new+/f") {
		t.Errorf("RemoveAll: %v, still there %v", err, m.Exists("/new+/f"))
	}
	if err := m.RemoveAll("/never"); err != nil {
		t.Errorf("removing a missing path: %v", err)
	}
	if err := m.MkdirAll("/d/e f"); err != nil || !m.IsDir("/d/e f") {
		t.Errorf("MkdirAll: %v", err)
	}
	if _, err := m.Open("/missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a missing file: %v", err)
	}
}
