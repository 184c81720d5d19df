package fluxtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"testing"
)

func TestTarball(t *testing.T) {
	files := map[string][]byte{"deploy/app/cm.yaml": []byte("a"), "README.md": []byte("b")}
	one, err := Tarball(files)
	if err != nil {
		t.Fatal(err)
	}
	two, _ := Tarball(files)
	if !bytes.Equal(one, two) {
		t.Error("the same files gave different tarballs (the digest would change)")
	}
	gz, err := gzip.NewReader(bytes.NewReader(one))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
	want := []string{"deploy/", "deploy/app/", "README.md", "deploy/app/cm.yaml"}
	if len(names) != len(want) {
		t.Fatalf("entries %q, want %q", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("entries %q, want %q", names, want)
		}
	}
	for _, bad := range []string{"../x", "/etc/x", "a/../../x"} {
		if _, err := Tarball(map[string][]byte{bad: nil}); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}
