package bot

import (
	"context"
	"fmt"
	"strings"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/ktree"
	"github.com/driftback/driftback/internal/repofs"
)

// WithRemotes returns snap with the GitHub remote bases root names mounted:
// each owner/repo@ref is fetched once as a tarball through the same client
// and cache as a commit (bounded by MaxBytes) and kept like one. snap comes
// back as it is when root names none. A failed fetch is an error, a failed
// poll of the target: planning without the base could only refuse or, worse,
// read its absence as drift gone.
func (s *Snapshots) WithRemotes(ctx context.Context, snap *analyzer.Snapshot, key, root string) (*analyzer.Snapshot, error) {
	rems := snap.Remotes(root)
	if len(rems) == 0 {
		return snap, nil
	}
	names := make([]string, len(rems))
	for i, r := range rems {
		names[i] = r.String()
	}
	mkey := key + "+" + strings.Join(names, "+")
	if m, ok := s.cached(mkey); ok {
		return m, nil
	}
	files := map[ktree.Remote]*repofs.Repo{}
	for _, r := range rems {
		// GitHub matches owner and repository case-insensitively, so the
		// lower-cased names ktree keeps fetch the same repository.
		fetched, err := s.Load(ctx, r.Owner, r.Repo, r.Ref)
		if err != nil {
			return nil, fmt.Errorf("remote base %s: %w", r, err)
		}
		files[r] = fetched.Repo()
	}
	m, err := snap.Mount(files)
	if err != nil {
		return nil, err
	}
	return s.keep(mkey, m), nil
}
