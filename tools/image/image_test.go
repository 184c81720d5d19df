package main

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"debug/elf"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The build-time values the test stamps and then expects `driftback
// version`, inside the image, to print.
const (
	testVersion = "v9.8.7-imagetest"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
	testDate    = "2024-05-06T07:08:09Z"
)

// TestImage builds the real image from the driftback module two levels up,
// reads it back from the OCI layout, and checks what a cluster relies on:
// both platforms, the entrypoint, a non-root user, a static binary that
// runs `version` and `demo` as that user with nothing but /tmp writable,
// and a CA bundle Go reads.
func TestImage(t *testing.T) {
	work := t.TempDir()
	o := options{Repo: "../..", Out: filepath.Join(work, "layout"), BinDir: filepath.Join(work, "bin"),
		Version: testVersion, Commit: testCommit, Date: testDate, Platforms: defaultPlatforms}
	if err := o.fillDefaults(); err != nil {
		t.Fatal(err)
	}
	res, err := build(o)
	if err != nil {
		t.Fatal(err)
	}

	lp, err := layout.FromPath(o.Out)
	if err != nil {
		t.Fatal(err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(tm.Manifests) != 1 {
		t.Fatalf("index.json lists %d entries, want the one image index", len(tm.Manifests))
	}
	d := tm.Manifests[0]
	if d.MediaType != types.OCIImageIndex || d.Annotations[refNameKey] != testVersion || d.Digest != res.Digest {
		t.Fatalf("index.json entry %+v; want an OCI image index %s named %s", d, res.Digest, testVersion)
	}
	idx, err := top.ImageIndex(d.Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	var platforms []string
	for _, m := range im.Manifests {
		if m.Platform == nil || m.MediaType != types.OCIManifestSchema1 {
			t.Fatalf("index entry %+v: want an OCI manifest with a platform", m)
		}
		platforms = append(platforms, m.Platform.String())
	}
	if want := []string{"linux/amd64", "linux/arm64/v8"}; !slices.Equal(platforms, want) {
		t.Fatalf("platforms %q, want %q", platforms, want)
	}
	for _, m := range im.Manifests {
		t.Run(m.Platform.String(), func(t *testing.T) {
			img, err := idx.Image(m.Digest)
			if err != nil {
				t.Fatal(err)
			}
			root := checkImage(t, img, m.Platform)
			if m.Platform.Architecture == runtime.GOARCH {
				runInImage(t, root)
			}
		})
	}

	// The same inputs give the same image, byte for byte.
	o2 := o
	o2.Out, o2.BinDir = filepath.Join(work, "layout2"), filepath.Join(work, "bin2")
	again, err := build(o2)
	if err != nil {
		t.Fatal(err)
	}
	if again.Digest != res.Digest {
		t.Errorf("a second build of the same inputs has digest %s, the first %s", again.Digest, res.Digest)
	}
}

// checkImage checks one platform's config and files, extracts its
// filesystem, and returns where.
func checkImage(t *testing.T, img v1.Image, p *v1.Platform) string {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if cf.OS != p.OS || cf.Architecture != p.Architecture || cf.Variant != p.Variant {
		t.Errorf("config says %s/%s/%s, the index %s", cf.OS, cf.Architecture, cf.Variant, p)
	}
	if !slices.Equal(c.Entrypoint, []string{binaryPath}) || len(c.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q; want [%s] and no cmd (the Deployment's args follow the entrypoint)", c.Entrypoint, c.Cmd, binaryPath)
	}
	if c.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 (the Deployment's runAsUser)", c.User)
	}
	if _, ok := c.ExposedPorts["8080/tcp"]; !ok {
		t.Errorf("exposed ports %v lack 8080/tcp", c.ExposedPorts)
	}
	if c.Labels["org.opencontainers.image.version"] != testVersion || c.Labels["org.opencontainers.image.revision"] != testCommit {
		t.Errorf("labels %v do not carry the version and commit", c.Labels)
	}
	if want, _ := time.Parse(time.RFC3339, testDate); !cf.Created.Time.Equal(want) {
		t.Errorf("created %v, want the build date %v", cf.Created, want)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range layers {
		if mt, _ := l.MediaType(); mt != types.OCILayer {
			t.Errorf("layer media type %s, want %s", mt, types.OCILayer)
		}
	}

	root := t.TempDir()
	headers := extract(t, mutate.Extract(img), root)
	byName := map[string]*tar.Header{}
	for _, h := range headers {
		byName["/"+strings.TrimSuffix(h.Name, "/")] = h
	}
	bin := byName[binaryPath]
	if bin == nil || bin.Typeflag != tar.TypeReg || bin.Mode&0o777 != 0o755 || bin.Uid != 0 {
		t.Fatalf("%s: %+v; want a root-owned 0755 file", binaryPath, bin)
	}
	// Read-only root: the user may write nowhere but the scratch
	// directories (which the Deployment mounts as volumes anyway).
	for n, h := range byName {
		writable := h.Uid == uid && h.Mode&0o200 != 0 || h.Mode&0o002 != 0
		if writable && n != "/tmp" && n != homeDir {
			t.Errorf("%s is writable by the image's user (uid %d mode %o)", n, h.Uid, h.Mode)
		}
		if !time.Unix(h.ModTime.Unix(), 0).Equal(cf.Created.Time) {
			t.Errorf("%s has time %v, not the build date", n, h.ModTime)
		}
	}
	if h := byName["/tmp"]; h == nil || h.Mode&0o1777 != 0o1777 {
		t.Errorf("/tmp: %+v; want a sticky world-writable directory", h)
	}
	if b, err := os.ReadFile(filepath.Join(root, "etc/passwd")); err != nil || !strings.Contains(string(b), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd lacks the nonroot user: %q %v", b, err)
	}

	ef, err := elf.Open(filepath.Join(root, binaryPath))
	if err != nil {
		t.Fatal(err)
	}
	defer ef.Close()
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[p.Architecture]
	if ef.Machine != machine {
		t.Errorf("the binary is for %v, the image for %s", ef.Machine, p.Architecture)
	}
	for _, prog := range ef.Progs {
		if prog.Type == elf.PT_INTERP || prog.Type == elf.PT_DYNAMIC {
			t.Errorf("the binary is dynamically linked (%v); an empty base has no libc", prog.Type)
		}
	}

	checkCABundle(t, filepath.Join(root, caPath))
	return root
}

// checkCABundle: Go's crypto/x509 reads this file first on Linux; it must
// hold the roots GitHub's API certificates chain to.
func checkCABundle(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("CA bundle: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		t.Fatalf("%s holds no PEM certificate", path)
	}
	subjects := map[string]bool{}
	n := 0
	for rest := b; ; {
		var blk *pem.Block
		blk, rest = pem.Decode(rest)
		if blk == nil {
			break
		}
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !c.IsCA {
			t.Errorf("%s: %s is not a CA", path, c.Subject)
		}
		subjects[c.Subject.CommonName] = true
		n++
	}
	if n < 100 {
		t.Errorf("%s holds %d roots; Mozilla's store has well over 100", path, n)
	}
	for _, cn := range []string{"USERTrust ECC Certification Authority", "USERTrust RSA Certification Authority", "DigiCert Global Root G2", "ISRG Root X1"} {
		if !subjects[cn] {
			t.Errorf("%s lacks %q", path, cn)
		}
	}
	if os.Getenv("SSL_CERT_FILE") == "" { // the image sets it; check the path Go reads with it
		t.Setenv("SSL_CERT_FILE", path)
		if sys, err := x509.SystemCertPool(); err != nil || !sys.Equal(pool) {
			t.Errorf("Go's system pool with SSL_CERT_FILE=%s is not the bundle: %v", path, err)
		}
	}
}

// extract writes a flattened image filesystem under root and returns its
// headers in order.
func extract(t *testing.T, rc io.ReadCloser, root string) []*tar.Header {
	t.Helper()
	defer rc.Close()
	var hs []*tar.Header
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return hs
		}
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
		p := filepath.Join(root, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, root+string(filepath.Separator)) {
			t.Fatalf("layer entry %q escapes the root", h.Name)
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, b, 0o644); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("layer entry %q: unexpected type %c", h.Name, h.Typeflag)
		}
		// Modes and owners as the image says, so the run below sees them.
		if err := os.Chmod(p, fs.FileMode(h.Mode&0o777)|modeBits(h.Mode)); err != nil {
			t.Fatal(err)
		}
		if os.Geteuid() == 0 {
			if err := os.Lchown(p, h.Uid, h.Gid); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func modeBits(m int64) fs.FileMode {
	if m&0o1000 != 0 {
		return fs.ModeSticky
	}
	return 0
}

// runInImage runs the binary of the host's platform in the extracted
// image: as root, chrooted into it as the image's user, with the home
// directory made read-only so that /tmp (a volume in the Deployment) is
// the only writable place; then checks nothing else changed. Without root
// it can only run the binary in place, which a developer machine may do;
// CI (CI=true) runs as root and must do the full check.
func runInImage(t *testing.T, root string) {
	t.Helper()
	chroot := os.Geteuid() == 0
	if !chroot {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI runs as root so that the binary can be run chrooted in the image as its user; this run is not root")
		}
		t.Log("not root: running the image's binary outside a chroot (the read-only check needs root)")
	}
	if chroot {
		if err := os.Chmod(filepath.Join(root, homeDir), 0o500); err != nil {
			t.Fatal(err)
		}
	}
	before := tree(t, root)
	run := func(args ...string) string {
		t.Helper()
		path := filepath.Join(root, binaryPath)
		if chroot {
			path = binaryPath
		}
		cmd := exec.Command(path, args...)
		cmd.Env = []string{"PATH=/", "HOME=" + homeDir, "SSL_CERT_FILE=" + caPath}
		cmd.Dir = "/"
		if chroot {
			cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: root, Credential: &syscall.Credential{Uid: uid, Gid: uid}}
		} else {
			cmd.Dir = root
		}
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("%s %q: %v", binaryPath, args, err)
			}
			t.Fatalf("%s %q: %v\n%s%s", binaryPath, args, err, out.String(), errb.String())
		}
		return out.String()
	}
	got := run("version")
	want := "driftback " + testVersion + " (commit " + testCommit + ", built " + testDate + ")\n"
	if got != want {
		t.Errorf("version printed %q, want %q", got, want)
	}
	// One complete reconcile (kustomize, the analyzer, the bot against the
	// in-process GitHub server): it needs no write but a temporary file.
	if out := run("demo"); !strings.Contains(out, "Pull request #1") {
		t.Errorf("demo in the image printed no pull request:\n%s", out)
	}
	after := tree(t, root)
	for p, s := range after {
		if p == "/tmp" || strings.HasPrefix(p, "/tmp/") {
			continue // the Deployment's emptyDir
		}
		if before[p] != s {
			t.Errorf("running the image changed %s (%q → %q)", p, before[p], s)
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("running the image removed %s", p)
		}
	}
}

// tree maps every path under root to its mode, size and time.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel := "/" + strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		m[rel] = fmt.Sprintf("%v %v %d", info.Mode(), info.ModTime(), info.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
