package fetch

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

func tarball(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for name, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func TestFetch(t *testing.T) {
	good := tarball(t, map[string]string{"deploy/cm.yaml": "kind: ConfigMap\n"})
	evil := tarball(t, map[string]string{"../escape.yaml": "x"})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/good.tar.gz":
			w.Write(good)
		case "/evil.tar.gz":
			w.Write(evil)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()

	dir := t.TempDir()
	if err := New().FetchWithContext(ctx, srv.URL+"/good.tar.gz", sha(good), dir); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "deploy/cm.yaml")); err != nil || string(b) != "kind: ConfigMap\n" {
		t.Fatalf("unpacked file: %q, %v", b, err)
	}

	// The host override sends the request elsewhere than the URL says.
	dir = t.TempDir()
	if err := New(WithHostnameOverwrite(srv.Listener.Addr().String())).
		FetchWithContext(ctx, "http://source-controller.invalid/good.tar.gz", sha(good), dir); err != nil {
		t.Fatal(err)
	}

	dir = t.TempDir()
	err := New().FetchWithContext(ctx, srv.URL+"/good.tar.gz", sha([]byte("other")), dir)
	if !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("wrong digest: got %v, want ErrDigestMismatch", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a mismatching artifact was unpacked: %v", entries)
	}

	if err := New(WithRetries(2)).FetchWithContext(ctx, srv.URL+"/missing.tar.gz", sha(good), t.TempDir()); !errors.Is(err, ErrFileNotFound) {
		t.Fatalf("missing artifact: got %v, want ErrFileNotFound", err)
	}

	parent := t.TempDir()
	dir = filepath.Join(parent, "out")
	if err := New().FetchWithContext(ctx, srv.URL+"/evil.tar.gz", sha(evil), dir); err == nil {
		t.Error("an entry leaving the directory was accepted")
	}
	if _, err := os.Stat(filepath.Join(parent, "escape.yaml")); err == nil {
		t.Error("an entry was written outside the directory")
	}

	if err := New(WithMaxDownloadSize(10)).FetchWithContext(ctx, srv.URL+"/good.tar.gz", sha(good), t.TempDir()); err == nil {
		t.Error("the size cap was not enforced")
	}
}
