// Package fetch downloads a source artifact (a gzipped tarball) over HTTP,
// checks it against the digest the source object advertises, and unpacks it
// into a directory. Written for driftback's test tools as a stand-in for the
// Flux module of the same path, whose zip the module proxy refuses; it has
// the API kustomize-controller calls and nothing else. Unpacking is done by
// the real github.com/fluxcd/pkg/tar, which refuses paths that leave the
// target directory.
package fetch

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/fluxcd/pkg/tar"
	"github.com/go-logr/logr"
)

var (
	// ErrFileNotFound: the server answered 404 for the artifact URL.
	ErrFileNotFound = errors.New("artifact not found")
	// ErrDigestMismatch: the downloaded bytes do not hash to the digest the
	// caller expected.
	ErrDigestMismatch = errors.New("artifact digest mismatch")
)

// ArchiveFetcher holds the settings of one download-and-unpack.
type ArchiveFetcher struct {
	log             logr.Logger
	retries         int
	maxDownloadSize int // < 0: no limit
	untarOpts       []tar.Option
	hostOverride    string
	tlsConfig       *tls.Config
}

// Option changes one setting of an ArchiveFetcher.
type Option func(*ArchiveFetcher)

// WithLogger sets where retries are logged.
func WithLogger(l logr.Logger) Option { return func(f *ArchiveFetcher) { f.log = l } }

// WithRetries sets how many times a failed request is tried again.
func WithRetries(n int) Option { return func(f *ArchiveFetcher) { f.retries = n } }

// WithMaxDownloadSize caps the download in bytes; a negative value (such as
// tar.UnlimitedUntarSize) means no cap.
func WithMaxDownloadSize(n int) Option { return func(f *ArchiveFetcher) { f.maxDownloadSize = n } }

// WithUntar passes options to the unpacking step.
func WithUntar(opts ...tar.Option) Option {
	return func(f *ArchiveFetcher) { f.untarOpts = append(f.untarOpts, opts...) }
}

// WithHostnameOverwrite replaces the host (and port) of every artifact URL
// with host, when host is not empty.
func WithHostnameOverwrite(host string) Option {
	return func(f *ArchiveFetcher) { f.hostOverride = host }
}

// WithTLSConfig sets the TLS client configuration for https artifact URLs.
func WithTLSConfig(c *tls.Config) Option { return func(f *ArchiveFetcher) { f.tlsConfig = c } }

// New returns a fetcher with the given options applied over the defaults
// (no retries, no size cap, a discarding logger).
func New(opts ...Option) *ArchiveFetcher {
	f := &ArchiveFetcher{log: logr.Discard(), maxDownloadSize: -1}
	for _, o := range opts {
		o(f)
	}
	return f
}

// Fetch is FetchWithContext without a deadline.
func (f *ArchiveFetcher) Fetch(archiveURL, digest, dir string) error {
	return f.FetchWithContext(context.Background(), archiveURL, digest, dir)
}

// FetchWithContext downloads archiveURL, checks that its bytes hash to
// digest ("<algorithm>:<hex>", with sha256, sha384 or sha512), and unpacks
// the tarball into dir. Nothing is unpacked unless the digest matches.
func (f *ArchiveFetcher) FetchWithContext(ctx context.Context, archiveURL, digest, dir string) error {
	want, newHash, err := parseDigest(digest)
	if err != nil {
		return err
	}
	u, err := url.Parse(archiveURL)
	if err != nil {
		return fmt.Errorf("parse artifact URL %q: %w", archiveURL, err)
	}
	if f.hostOverride != "" {
		u.Host = f.hostOverride
	}

	tmp, err := os.CreateTemp("", "artifact-*.tar.gz")
	if err != nil {
		return err
	}
	defer func() {
		tmp.Close()
		os.Remove(tmp.Name())
	}()

	client := &http.Client{Transport: &http.Transport{
		Proxy:           http.ProxyFromEnvironment,
		TLSClientConfig: f.tlsConfig,
	}}
	var lastErr error
	for attempt := 0; attempt <= f.retries; attempt++ {
		if attempt > 0 {
			wait := time.Duration(attempt) * 500 * time.Millisecond
			f.log.V(1).Info("retrying artifact download", "url", u.String(), "attempt", attempt, "error", lastErr.Error())
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(wait):
			}
		}
		var retry bool
		retry, lastErr = f.download(ctx, client, u.String(), tmp)
		if lastErr == nil || !retry {
			break
		}
	}
	if lastErr != nil {
		return lastErr
	}

	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	h := newHash()
	if _, err := io.Copy(h, tmp); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("%w: %s has %s:%s, want %s", ErrDigestMismatch, u.String(),
			strings.SplitN(digest, ":", 2)[0], got, digest)
	}

	if _, err := tmp.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if err := tar.Untar(tmp, dir, f.untarOpts...); err != nil {
		return fmt.Errorf("unpack artifact %s: %w", u.String(), err)
	}
	return nil
}

// download writes the body of one GET into w (truncated first). retry says
// whether the failure may go away on its own (network errors, 5xx, 429).
func (f *ArchiveFetcher) download(ctx context.Context, client *http.Client, u string, w *os.File) (retry bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return ctx.Err() == nil, fmt.Errorf("download artifact %s: %w", u, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return false, fmt.Errorf("%w: %s", ErrFileNotFound, u)
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return true, fmt.Errorf("download artifact %s: %s", u, resp.Status)
	case resp.StatusCode != http.StatusOK:
		return false, fmt.Errorf("download artifact %s: %s", u, resp.Status)
	}
	if err := w.Truncate(0); err != nil {
		return false, err
	}
	if _, err := w.Seek(0, io.SeekStart); err != nil {
		return false, err
	}
	body := io.Reader(resp.Body)
	if f.maxDownloadSize >= 0 {
		body = io.LimitReader(resp.Body, int64(f.maxDownloadSize)+1)
	}
	n, err := io.Copy(w, body)
	if err != nil {
		return true, fmt.Errorf("download artifact %s: %w", u, err)
	}
	if f.maxDownloadSize >= 0 && n > int64(f.maxDownloadSize) {
		return false, fmt.Errorf("artifact %s is larger than the %d bytes allowed", u, f.maxDownloadSize)
	}
	return false, nil
}

func parseDigest(d string) (hexSum string, newHash func() hash.Hash, err error) {
	algo, sum, ok := strings.Cut(d, ":")
	if !ok || sum == "" {
		return "", nil, fmt.Errorf("artifact digest %q is not <algorithm>:<hex>", d)
	}
	switch algo {
	case "sha256":
		newHash = sha256.New
	case "sha384":
		newHash = sha512.New384
	case "sha512":
		newHash = sha512.New
	default:
		return "", nil, fmt.Errorf("artifact digest algorithm %q is not supported by this stand-in", algo)
	}
	if _, err := hex.DecodeString(sum); err != nil || len(sum) != 2*newHash().Size() {
		return "", nil, fmt.Errorf("artifact digest %q has a malformed %s sum", d, algo)
	}
	return strings.ToLower(sum), newHash, nil
}
