package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The image's fixed facts; the test reads the image and checks them.
const (
	binaryPath = "/driftback"
	caPath     = "/etc/ssl/certs/ca-certificates.crt"
	uid        = 65532 // the user distroless calls nonroot
	userName   = "nonroot"
	homeDir    = "/home/nonroot"
	httpPort   = "8080/tcp"
	sourceURL  = "https://github.com/driftback/driftback"
	refNameKey = "org.opencontainers.image.ref.name"
)

var defaultPlatforms = []string{"linux/amd64", "linux/arm64"}

type options struct {
	Repo                  string   // the driftback module root
	Out                   string   // OCI layout directory
	BinDir                string   // binaries, one per platform
	Version, Commit, Date string   // stamped into the binary; Date is RFC 3339
	Platforms             []string // OS/ARCH
}

type result struct {
	Index    v1.ImageIndex
	Digest   v1.Hash  // of the index
	Binaries []string // paths, in the order of Platforms
}

// build compiles one binary per platform, makes one image per binary and
// writes the index of them as an OCI layout at o.Out.
func build(o options) (*result, error) {
	when, err := time.Parse(time.RFC3339, o.Date)
	if err != nil {
		return nil, fmt.Errorf("date %q: %v", o.Date, err)
	}
	ca, err := caBundle()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.BinDir, 0o755); err != nil {
		return nil, err
	}
	res := &result{}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range o.Platforms {
		plat, err := v1.ParsePlatform(p)
		if err != nil {
			return nil, err
		}
		if plat.OS != "linux" {
			return nil, fmt.Errorf("platform %s: only linux images are built", p)
		}
		if plat.Architecture == "arm64" && plat.Variant == "" {
			plat.Variant = "v8"
		}
		bin := filepath.Join(o.BinDir, fmt.Sprintf("driftback_%s_%s", plat.OS, plat.Architecture))
		if err := compile(o, plat, bin); err != nil {
			return nil, err
		}
		res.Binaries = append(res.Binaries, bin)
		img, err := image(o, plat, when, bin, ca)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: plat},
		})
	}
	idx = mutate.Annotations(idx, labels(o)).(v1.ImageIndex)
	if res.Digest, err = idx.Digest(); err != nil {
		return nil, err
	}
	res.Index = idx
	if err := os.RemoveAll(o.Out); err != nil {
		return nil, err
	}
	lp, err := layout.Write(o.Out, empty.Index)
	if err != nil {
		return nil, err
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{refNameKey: o.Version})); err != nil {
		return nil, err
	}
	return res, nil
}

// compile builds a static, reproducible binary with the version stamped in.
func compile(o options, p *v1.Platform, out string) error {
	abs, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	ldflags := fmt.Sprintf("-s -w -buildid= -X main.version=%s -X main.commit=%s -X main.date=%s", o.Version, o.Commit, o.Date)
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", abs, ".")
	cmd.Dir = o.Repo
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture, "GOWORK=off", "GOFLAGS=")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for %s/%s: %w", p.OS, p.Architecture, err)
	}
	return nil
}

// caBundle is Mozilla's root store as the Go team publishes it
// (golang.org/x/crypto/x509roots/fallback, pinned in go.mod), in PEM, at
// the path Go's crypto/x509 reads first on Linux. Roots that NSS trusts
// only with a distrust-after date are left out: a PEM bundle cannot carry
// that limit, and trusting them without it would be wider than NSS.
func caBundle() ([]byte, error) {
	var b bytes.Buffer
	n := 0
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		c, err := x509.ParseCertificate(r.Certificate)
		if err != nil {
			return nil, fmt.Errorf("CA bundle: %v", err)
		}
		fmt.Fprintf(&b, "# %s\n", c.Subject)
		if err := pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate}); err != nil {
			return nil, err
		}
		n++
	}
	if n < 50 {
		return nil, fmt.Errorf("CA bundle: only %d roots", n)
	}
	return b.Bytes(), nil
}

func labels(o options) map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":    "driftback",
		"org.opencontainers.image.source":   sourceURL,
		"org.opencontainers.image.version":  o.Version,
		"org.opencontainers.image.revision": o.Commit,
		"org.opencontainers.image.created":  o.Date,
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
}

// image is one platform's image: an empty base, then /etc and the home
// directory, the CA bundle, and the binary, each its own layer.
func image(o options, p *v1.Platform, when time.Time, bin string, ca []byte) (v1.Image, error) {
	binary, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:%s:/sbin/nologin\n", userName, uid, uid, userName, homeDir)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", userName, uid)
	layers := []struct {
		what    string
		entries []entry
	}{
		{"users and directories", []entry{
			dir("etc", 0o755, 0), file("etc/passwd", 0o644, 0, []byte(passwd)), file("etc/group", 0o644, 0, []byte(group)),
			dir("home", 0o755, 0), dir(strings.TrimPrefix(homeDir, "/"), 0o700, uid),
			dir("tmp", 0o1777, 0),
		}},
		{"CA certificates", []entry{
			dir("etc", 0o755, 0), dir("etc/ssl", 0o755, 0), dir("etc/ssl/certs", 0o755, 0),
			file(strings.TrimPrefix(caPath, "/"), 0o644, 0, ca),
		}},
		{"driftback " + o.Version, []entry{file(strings.TrimPrefix(binaryPath, "/"), 0o755, 0, binary)}},
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	for _, l := range layers {
		layer, err := tarLayer(l.entries, when)
		if err != nil {
			return nil, err
		}
		img, err = mutate.Append(img, mutate.Addendum{
			Layer:     layer,
			MediaType: types.OCILayer,
			History:   v1.History{Created: v1.Time{Time: when}, CreatedBy: "tools/image: " + l.what, Comment: "driftback"},
		})
		if err != nil {
			return nil, err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: when}
	cf.Author = "driftback"
	cf.Config = v1.Config{
		Entrypoint:   []string{binaryPath},
		User:         fmt.Sprintf("%d:%d", uid, uid),
		WorkingDir:   "/",
		Env:          []string{"PATH=/", "HOME=" + homeDir, "SSL_CERT_FILE=" + caPath},
		ExposedPorts: map[string]struct{}{httpPort: {}},
		Labels:       labels(o),
	}
	return mutate.ConfigFile(img, cf)
}

// entry is one file or directory of a layer.
type entry struct {
	name  string
	mode  int64
	owner int
	dir   bool
	data  []byte
}

func dir(name string, mode int64, owner int) entry {
	return entry{name: name, mode: mode, owner: owner, dir: true}
}
func file(name string, mode int64, owner int, data []byte) entry {
	return entry{name: name, mode: mode, owner: owner, data: data}
}

// tarLayer writes entries, in order, with one time and no user or group
// names, so the layer's bytes depend on the contents alone.
func tarLayer(entries []entry, when time.Time) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name: e.name, Mode: e.mode, Uid: e.owner, Gid: e.owner,
			ModTime: when, Format: tar.FormatPAX,
		}
		if e.dir {
			h.Typeflag, h.Name = tar.TypeDir, e.name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	raw := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(raw)), nil
	}, tarball.WithMediaType(types.OCILayer), tarball.WithCompressionLevel(gzip.BestCompression))
}

// pushIndex pushes the index, and the images in it, to ref with the
// credentials `docker login` (or docker/login-action) stored, and returns
// the digest the registry holds it under.
func pushIndex(idx v1.ImageIndex, ref string) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", err
	}
	if err := remote.WriteIndex(r, idx, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	d, err := idx.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}
