package archive

import (
	"context"
	"fmt"
	"strings"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/internal/repofs"
)

// WithRemotes returns snap with the GitHub remote bases root names mounted:
// each owner/repo@ref is fetched once as a tarball through the same client
// and cache as a commit (bounded by MaxBytes) and kept like one. snap comes
// back as it is when root names none. A failed fetch is an error, a failed
// poll of the target: planning without the base could only refuse or, worse,
// read its absence as drift gone.
//
// A ref names a commit only for now: a branch moves, and even a tag can.
// So each ref is resolved to its commit on every call (a conditional
// request), the snapshot is kept by commit, and pinned reports what each
// ref resolved to, for the idle poll to notice when one moves.
func (s *Archives) WithRemotes(ctx context.Context, snap *analyzer.Snapshot, key, root string) (m *analyzer.Snapshot, pinned []RemotePin, err error) {
	rems := snap.Remotes(root)
	if len(rems) == 0 {
		return snap, nil, nil
	}
	names := make([]string, len(rems))
	for i, r := range rems {
		// GitHub matches owner and repository case-insensitively, so the
		// lower-cased names the analyzer keeps fetch the same repository.
		pin := RemotePin{Owner: r.Owner, Repo: r.Repo, Ref: r.Ref}
		if pin.SHA, err = s.Resolve(ctx, pin); err != nil {
			return nil, nil, fmt.Errorf("remote base %s: %w", r, err)
		}
		pinned = append(pinned, pin)
		names[i] = r.String() + "=" + pin.SHA
	}
	mkey := key + "+" + strings.Join(names, "+")
	if m, ok := s.cached(mkey); ok {
		return m, pinned, nil
	}
	files := map[analyzer.Remote]*repofs.Repo{}
	for i, r := range rems {
		fetched, err := s.Load(ctx, r.Owner, r.Repo, pinned[i].SHA)
		if err != nil {
			return nil, nil, fmt.Errorf("remote base %s: %w", r, err)
		}
		files[r] = fetched.Repo()
	}
	if m, err = snap.Mount(files); err != nil {
		return nil, nil, err
	}
	return s.keep(mkey, m), pinned, nil
}

// RemotePin is a remote base's ref and the commit it named when read.
type RemotePin struct{ Owner, Repo, Ref, SHA string }

// Resolve reads the commit a remote base's ref names now; a full commit
// SHA names itself.
func (s *Archives) Resolve(ctx context.Context, pin RemotePin) (string, error) {
	if len(pin.Ref) == 40 && strings.Trim(pin.Ref, "0123456789abcdef") == "" {
		return pin.Ref, nil
	}
	sha, _, err := s.GitHub.Repositories.GetCommitSHA1(ctx, pin.Owner, pin.Repo, pin.Ref, "")
	if err != nil {
		return "", fmt.Errorf("resolve ref %s of %s/%s: %w", pin.Ref, pin.Owner, pin.Repo, err)
	}
	if sha = strings.TrimSpace(sha); len(sha) != 40 {
		return "", fmt.Errorf("resolve ref %s of %s/%s: GitHub answered %q, not a commit SHA", pin.Ref, pin.Owner, pin.Repo, githubapi.Truncate(sha, 60))
	}
	return sha, nil
}
