package archive

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/internal/repofs"
)

// Archives fetches commits as tarballs (one request each) and unpacks them
// into analyzer snapshots, keeping the last few by commit SHA: a commit
// never changes, so a kept snapshot (and what the analyzer learned of it)
// is never stale, and every target planned on one commit shares it. A file
// larger than any build reads (analyzer.MaxFileBytes) is kept by its size
// alone, so one huge file anywhere in a repository costs nothing.
type Archives struct {
	GitHub   *github.Client
	Download *http.Client // for the archive host; never sent the installation token; required
	MaxBytes int64        // uncompressed cap on the files kept; 0 = repofs.DefaultMaxBytes
	// KeepBytes bounds the memory of the snapshots kept across loads
	// (estimated: snapshotOverhead times their files), the least recently
	// used dropped first; the two most recently used are always kept: a
	// base that moved is compared with the one before it by every target
	// (measured at 1,000 targets: keeping one downloaded the two commits
	// 499 times in one round). 0 = 128 MiB.
	KeepBytes int64
	// Renders reuses kustomize builds across snapshots, keyed by the
	// content of every file a build reads; nil builds every time.
	Renders *analyzer.RenderCache

	mu       sync.Mutex
	cache    map[string]keptSnapshot
	order    []string
	bytes    int64              // of the kept snapshots' files
	inflight map[string]*flight // loads under way, by key
}

// flight is one download of a commit that the targets asking for it at
// the same time share: a 50 MB tarball is fetched once, not once a worker.
type flight struct {
	done chan struct{}
	snap *analyzer.Snapshot
	err  error
}

type keptSnapshot struct {
	snap  *analyzer.Snapshot
	bytes int64
}

// defaultKeepBytes is the snapshot cache's default budget.
const defaultKeepBytes = 128 << 20

// snapshotOverhead is what a snapshot takes once planned, as a multiple of
// its files: the parsed manifests and kustomizations, the trees and the
// fan-in map. Measured at 24 on the synthetic repository of 100 roots. It
// is what one snapshot costs alone: the kept snapshots of neighbouring
// commits share the parses of their unchanged files, so together
// they take less, and the budget errs on the safe side.
const snapshotOverhead = 25

// Load returns the snapshot of owner/repo at commit sha. Concurrent loads
// of one commit share one download; a waiter whose leader failed on its
// own context (a poll that was stopped) tries again on its own.
func (s *Archives) Load(ctx context.Context, owner, repo, sha string) (*analyzer.Snapshot, error) {
	key := owner + "/" + repo + "@" + sha
	for {
		s.mu.Lock()
		if r, ok := s.cache[key]; ok {
			s.usedLocked(key)
			s.mu.Unlock()
			return r.snap, nil
		}
		f, waiting := s.inflight[key]
		if !waiting {
			f = &flight{done: make(chan struct{})}
			if s.inflight == nil {
				s.inflight = map[string]*flight{}
			}
			s.inflight[key] = f
		}
		s.mu.Unlock()
		if !waiting {
			f.snap, f.err = s.download(ctx, owner, repo, sha, key)
			s.mu.Lock()
			delete(s.inflight, key)
			s.mu.Unlock()
			close(f.done)
			return f.snap, f.err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-f.done:
		}
		if f.err == nil || !errors.Is(f.err, context.Canceled) && !errors.Is(f.err, context.DeadlineExceeded) {
			return f.snap, f.err
		}
	}
}

// ErrNoSuchRevision is GitHub answering 404 for a commit's tarball: the
// repository has no such commit (or is gone from the installation).
var ErrNoSuchRevision = errors.New("GitHub has no such commit (404)")

// download fetches and unpacks one commit and keeps it.
func (s *Archives) download(ctx context.Context, owner, repo, sha, key string) (*analyzer.Snapshot, error) {
	// A renamed or transferred repository answers 301 to its old name:
	// followed, as every other request's redirect is.
	u, link, err := s.GitHub.Repositories.GetArchiveLink(ctx, owner, repo, github.Tarball, &github.RepositoryContentGetOptions{Ref: sha}, 3)
	if err != nil && link != nil && link.StatusCode == http.StatusNotFound {
		// go-github says only "unexpected status code" here.
		return nil, fmt.Errorf("tarball link for %s: %w", key, ErrNoSuchRevision)
	}
	if err != nil {
		return nil, fmt.Errorf("tarball link for %s: %w", key, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.Download.Do(req)
	if err != nil {
		return nil, fmt.Errorf("download tarball of %s: %w", key, redactURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("download tarball of %s: %s", key, resp.Status)
	}
	files, err := untar(resp.Body, s.maxBytes())
	if err != nil {
		return nil, fmt.Errorf("tarball of %s: %w", key, err)
	}
	snap := analyzer.NewSnapshot(files, s.Renders)
	snap.DropUnread()
	return s.keep(key, snap), nil
}

func (s *Archives) cached(key string) (*analyzer.Snapshot, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.cache[key]
	if ok {
		s.usedLocked(key)
	}
	return r.snap, ok
}

// usedLocked moves key to the end of the order, most recently used last:
// eviction takes the front.
func (s *Archives) usedLocked(key string) {
	if i := slices.Index(s.order, key); i >= 0 {
		s.order = append(append(s.order[:i:i], s.order[i+1:]...), key)
	}
}

// keep caches r under key and returns what the cache holds for key: a
// concurrent Load may have got there first.
func (s *Archives) keep(key string, r *analyzer.Snapshot) *analyzer.Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	if kept, ok := s.cache[key]; ok {
		return kept.snap
	}
	if s.cache == nil {
		s.cache = map[string]keptSnapshot{}
	}
	n := snapshotOverhead * r.Repo().Bytes()
	s.cache[key] = keptSnapshot{snap: r, bytes: n}
	s.order = append(s.order, key)
	s.bytes += n
	budget := s.KeepBytes
	if budget <= 0 {
		budget = defaultKeepBytes
	}
	for s.bytes > budget && len(s.order) > 2 {
		s.bytes -= s.cache[s.order[0]].bytes
		delete(s.cache, s.order[0])
		s.order = s.order[1:]
	}
	return r
}

func (s *Archives) maxBytes() int64 {
	if s.MaxBytes > 0 {
		return s.MaxBytes
	}
	return repofs.DefaultMaxBytes
}

// redactURL keeps the archive URL's query (it carries a token) out of
// errors and logs.
func redactURL(err error) error {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) {
		msg := err.Error()
		if i := strings.Index(msg, "?"); i >= 0 {
			if j := strings.IndexAny(msg[i:], "\" "); j >= 0 {
				msg = msg[:i] + msg[i+j:]
			} else {
				msg = msg[:i]
			}
		}
		return errors.New(msg)
	}
	return err
}

// untar reads GitHub's tarball: one top-level folder ({owner}-{repo}-{sha})
// holding the tree. Symlinks are recorded (the analyzer refuses builds that
// reach them); the uncompressed size is capped.
func untar(r io.Reader, maxBytes int64) (*repofs.Repo, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, err
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	repo := repofs.New()
	var total int64
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return repo, nil
		}
		if err != nil {
			return nil, err
		}
		name := h.Name
		i := strings.IndexByte(name, '/')
		if i < 0 {
			continue // the top folder itself, or the pax header
		}
		rel := name[i+1:]
		if rel == "" {
			continue
		}
		switch h.Typeflag {
		case tar.TypeReg:
			if h.Size > analyzer.MaxFileBytes {
				// No build may read it (the analyzer refuses it by its size):
				// never held, not even while loading.
				if err := repo.AddUnkept(rel, h.Size); err != nil {
					return nil, err
				}
				continue
			}
			total += h.Size
			if total > maxBytes {
				return nil, fmt.Errorf("larger than %d bytes", maxBytes)
			}
			data, err := io.ReadAll(io.LimitReader(tr, h.Size))
			if err != nil {
				return nil, err
			}
			if err := repo.Add(rel, data); err != nil {
				return nil, err
			}
		case tar.TypeSymlink:
			if err := repo.AddSymlink(rel, h.Linkname); err != nil {
				return nil, err
			}
		}
	}
}

// DownloadTimeout bounds one tarball download, body included.
const DownloadTimeout = 5 * time.Minute

// At is repository owner/repo at rev with the remote bases root names
// mounted; the refs those resolved to are added to pins when
// pins is not nil.
func (s *Archives) At(ctx context.Context, owner, repo, rev, base, root string, pins *[]RemotePin) (*analyzer.Snapshot, error) {
	snap, err := s.Load(ctx, owner, repo, rev)
	if err != nil && rev != base && (errors.Is(err, ErrNoSuchRevision) || githubapi.IsNotFound(err)) {
		// The base head exists; a revision the tool applied may not.
		return nil, &MissingCommit{SHA: rev, Err: err}
	}
	if err != nil {
		return nil, err
	}
	mounted, pinned, err := s.WithRemotes(ctx, snap, owner+"/"+repo+"@"+rev, root)
	if pins != nil {
		for _, pin := range pinned {
			// A plan loads the applied revision and the base: a ref both
			// name is remembered once.
			if !slices.Contains(*pins, pin) {
				*pins = append(*pins, pin)
			}
		}
	}
	return mounted, err
}

// MissingCommit is a revision GitHub answers 404 for: one the GitOps tool
// applied that the repository does not have (the base head always exists).
type MissingCommit struct {
	SHA string
	Err error
}

func (e *MissingCommit) Error() string { return e.Err.Error() }
func (e *MissingCommit) Unwrap() error { return e.Err }
