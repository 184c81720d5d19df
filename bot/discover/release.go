package discover

import (
	"context"
	"fmt"
	"strings"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/cluster"
)

// Loader is a repository owner/repo at commit sha (archive.Archives.Load);
// nil and no error when the repository has no such commit.
type Loader func(ctx context.Context, owner, repo, sha string) (*analyzer.Snapshot, error)

// LocateReleases finds, for each Flux HelmRelease among found whose chart
// is in a repository of owner on webHost, the file that declares it
// (DiscoveredRelease.File): in the repository at the commit its
// Kustomization applied, the origin of the HelmRelease in that
// Kustomization's render (analyzer.Snapshot.ReleaseFile). One that cannot
// be a target is given the reason in Skip: its Kustomization renders from
// another repository or branch than its chart, the commit is gone, or the
// file is not the whole truth of what was applied. Loading a repository
// that fails is an error: discovery never drops a target on a transient
// error.
func LocateReleases(ctx context.Context, load Loader, webHost, owner string, found []cluster.Discovered) error {
	for i := range found {
		d := &found[i]
		rel := d.Release
		if rel == nil || d.Skip != "" {
			continue
		}
		repo, ok := ownRepo(d.RepoURL, webHost, owner)
		if !ok {
			continue // Targets says why
		}
		if from, ok := RepoOfGitURL(rel.RepoURL, webHost); !ok || !strings.EqualFold(from, repo) || rel.Branch != d.Branch {
			d.Skip = fmt.Sprintf("its chart's GitRepository (%s) is not the repository and branch of the Flux Kustomization %s/%s that applied it (%s): a HelmRelease target's file and chart are of one repository",
				gitRef(d.RepoURL, d.Branch), rel.Applier.Namespace, rel.Applier.Name, gitRef(rel.RepoURL, rel.Branch))
			continue
		}
		o, n, _ := strings.Cut(repo, "/")
		snap, err := load(ctx, o, n, rel.Revision)
		if err != nil {
			return fmt.Errorf("flux HelmRelease %s/%s: %s at %s: %w", d.Namespace, d.Name, repo, rel.Revision, err)
		}
		if snap == nil {
			d.Skip = fmt.Sprintf("%s has no commit %s, the one its Flux Kustomization %s/%s applied", repo, rel.Revision, rel.Applier.Namespace, rel.Applier.Name)
			continue
		}
		file, why, err := snap.ReleaseFile(rootOf(d.Path), &rel.Applier, d.Namespace, d.Name)
		if err != nil {
			return fmt.Errorf("flux HelmRelease %s/%s: %s at %s: %w", d.Namespace, d.Name, repo, rel.Revision, err)
		}
		if why != "" {
			d.Skip = fmt.Sprintf("at %.7s, as its Flux Kustomization %s/%s applied it: %s", rel.Revision, rel.Applier.Namespace, rel.Applier.Name, why)
			continue
		}
		rel.File = file
	}
	return nil
}

// gitRef is a repository URL and the branch followed.
func gitRef(url, branch string) string {
	if branch == "" {
		return url + ", its default branch"
	}
	return url + ", branch " + branch
}
