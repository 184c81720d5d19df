package discover

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/kube"
)

// Discovered targets (DESIGN §13): a Flux Kustomization or Argo CD
// Application whose repository belongs to the App's owner becomes a target
// that compares exactly its inventory, at the revision it applied.

// Target is a target made from a GitOps object of a cluster.
type Target struct {
	Config    config.Target // resolved: defaults merged in
	Inventory []cluster.InventoryEntry
}

// Discovery is one cluster's discovery turned into targets, with what was
// left out and why (for the log).
type Discovery struct {
	Targets []Target
	Skipped []string
}

// Targets turns what discovery found in cluster into targets: the
// objects whose repository is on webHost (github.com, or the Enterprise
// host) under owner, that no hand-written target of the cluster already
// covers (same applied-revision object, or same repository and root).
func Targets(cfg *config.Config, clusterName, webHost string, found []cluster.Discovered) Discovery {
	var out Discovery
	type covered struct{ tool, ns, name string }
	byObject := map[covered]bool{}
	byRoot := map[string]bool{}
	names := map[string]bool{}
	for _, t := range cfg.Targets {
		names[t.Name] = true
		if t.Cluster != clusterName {
			continue
		}
		if f := t.AppliedRevision.Flux; f != nil {
			byObject[covered{"flux", f.Namespace, f.Name}] = true
		}
		if a := t.AppliedRevision.ArgoCD; a != nil {
			byObject[covered{"argocd", a.Namespace, a.Name}] = true
		}
		if h := t.AppliedRevision.HelmRelease; h != nil {
			byObject[covered{"helm", h.Namespace, h.Name}] = true
		}
		byRoot[strings.ToLower(t.Repo)+"|"+path.Clean(t.Root)] = true
	}
	for _, d := range found {
		what := fmt.Sprintf("%s %s/%s", kindOf(d), d.Namespace, d.Name)
		if d.Skip != "" {
			out.Skipped = append(out.Skipped, what+": "+d.Skip)
			continue
		}
		repo, ok := ownRepo(d.RepoURL, webHost, cfg.GitHub.Owner)
		if !ok {
			out.Skipped = append(out.Skipped, fmt.Sprintf("%s: its repository %s is not one of %s on %s", what, d.RepoURL, cfg.GitHub.Owner, webHost))
			continue
		}
		root, tool := rootOf(d.Path), d.Tool
		if d.Release != nil {
			if d.Release.File == "" {
				out.Skipped = append(out.Skipped, what+": the file that declares it was not looked for: `driftback run` looks for it in the repository, this command reads none")
				continue
			}
			root, tool = d.Release.File, "helm"
		}
		if byObject[covered{tool, d.Namespace, d.Name}] || byRoot[strings.ToLower(repo)+"|"+root] {
			out.Skipped = append(out.Skipped, what+": a target written in the config covers it")
			continue
		}
		t := config.Target{Name: targetName(clusterName, tool, d), Repo: repo, BaseBranch: d.Branch, Root: root, Cluster: clusterName}
		if names[t.Name] {
			out.Skipped = append(out.Skipped, fmt.Sprintf("%s: a target of the config is already named %s", what, t.Name))
			continue
		}
		names[t.Name] = true
		ref := &kube.ObjectRef{Namespace: d.Namespace, Name: d.Name}
		switch tool {
		case "flux":
			t.AppliedRevision.Flux = ref
		case "helm":
			t.AppliedRevision.HelmRelease = ref
		default:
			t.AppliedRevision.ArgoCD = ref
		}
		out.Targets = append(out.Targets, Target{Config: *cfg.Resolve(&t), Inventory: d.Inventory})
		for _, u := range d.Unhandled {
			out.Skipped = append(out.Skipped, fmt.Sprintf("%s: %s is not handled: driftback renders kustomize and plain manifests, so the target %s covers only %s, and the objects of that source are listed as untracked", what, u, t.Name, d.Path))
		}
	}
	return out
}

// WebHost is the host of the web address behind a GitHub API root
// (api.github.com: github.com), where the repositories' Git URLs point.
func WebHost(apiURL string) (string, error) {
	u, err := url.Parse(apiURL)
	if err != nil {
		return "", err
	}
	w, err := url.Parse(githubapi.WebURL(u))
	if err != nil {
		return "", err
	}
	return w.Hostname(), nil
}

// ownRepo is owner/name of a Git URL on webHost when owner owns it.
func ownRepo(gitURL, webHost, owner string) (string, bool) {
	repo, ok := RepoOfGitURL(gitURL, webHost)
	return repo, ok && strings.EqualFold(strings.SplitN(repo, "/", 2)[0], owner)
}

// rootOf is a GitOps object's folder as a target's root: relative to the
// repository's top, "." for the top itself.
func rootOf(p string) string {
	root := path.Clean(strings.TrimPrefix(path.Clean("/"+p), "/"))
	if root == "" || root == "/" {
		root = "."
	}
	return root
}

// kindOf names the kind of GitOps object d is.
func kindOf(d cluster.Discovered) string {
	switch {
	case d.Release != nil:
		return "Flux HelmRelease"
	case d.Tool == "flux":
		return "Flux Kustomization"
	}
	return "Argo CD Application"
}

// InventoryScope narrows a target's scope to what an inventory spans: its
// namespaces and kinds, what a poll of a target by inventory lists before
// keeping only the inventory's objects (cluster.InInventory).
func InventoryScope(s cluster.Scope, inv []cluster.InventoryEntry) cluster.Scope {
	nss, kinds := map[string]bool{}, map[string]bool{}
	for _, e := range inv {
		if e.Namespace != "" {
			nss[e.Namespace] = true
		}
		k := e.Kind
		if e.Group != "" {
			k += "." + e.Group
		}
		kinds[k] = true
	}
	s.Namespaces, s.IncludeKinds = slices.Sorted(maps.Keys(nss)), slices.Sorted(maps.Keys(kinds))
	s.NamespaceSelector = ""
	return s
}

// TargetScope is the part of a cluster a target's config says it reads.
func TargetScope(tc *config.Target) cluster.Scope {
	return cluster.Scope{
		Namespaces: tc.Namespaces, NamespaceSelector: tc.NamespaceSelector,
		IncludeKinds: tc.Kinds.Include, ExcludeKinds: tc.Kinds.Exclude,
	}
}

var nameJunk = regexp.MustCompile(`[^a-z0-9-]+`)

// targetName names a discovered target after its cluster, tool ("flux",
// "argocd", or "helm" for a Flux HelmRelease), namespace and name, within
// the 63 characters a target name may have.
func targetName(clusterName, tool string, d cluster.Discovered) string {
	n := nameJunk.ReplaceAllString(strings.ToLower(fmt.Sprintf("%s-%s-%s-%s", clusterName, tool, d.Namespace, d.Name)), "-")
	n = strings.Trim(n, "-")
	if len(n) > 63 {
		sum := sha256.Sum256([]byte(n))
		n = strings.Trim(n[:54], "-") + "-" + hex.EncodeToString(sum[:4])
	}
	return n
}

// RepoOfGitURL reads owner/name from a Git URL on host, in the forms Flux,
// Argo CD and git accept: https://host/o/r(.git), ssh://git@host/o/r(.git),
// git@host:o/r(.git).
func RepoOfGitURL(raw, host string) (string, bool) {
	s := raw
	if strings.HasPrefix(s, "git@") && !strings.Contains(s, "://") {
		h, rest, ok := strings.Cut(strings.TrimPrefix(s, "git@"), ":")
		if !ok {
			return "", false
		}
		s = "ssh://git@" + h + "/" + rest
	}
	u, err := url.Parse(s)
	if err != nil || !strings.EqualFold(u.Hostname(), host) {
		return "", false
	}
	parts := strings.Split(strings.Trim(strings.TrimSuffix(u.Path, ".git"), "/"), "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return "", false
	}
	return parts[0] + "/" + parts[1], true
}

// LeaveOutPinned leaves out of d each Argo CD target whose targetRevision
// is no branch of its repository (DESIGN §13): a tag, or a ref that does
// not exist, pins the Application to a commit that no pull request moves;
// a proposal onto another branch would only wait for a sync that the pin
// never lets happen. One read of the ref per such target.
func LeaveOutPinned(ctx context.Context, gh *github.Client, d *Discovery) error {
	keep := d.Targets[:0]
	for _, dt := range d.Targets {
		t := dt.Config
		app := t.AppliedRevision.ArgoCD
		if app == nil || t.BaseBranch == "" {
			keep = append(keep, dt)
			continue
		}
		_, _, err := gh.Git.GetRef(ctx, t.Owner(), t.RepoName(), "heads/"+t.BaseBranch)
		if err == nil {
			keep = append(keep, dt)
			continue
		}
		if !githubapi.IsNotFound(err) {
			return fmt.Errorf("%s: targetRevision %s: %w", t.Repo, t.BaseBranch, err)
		}
		what := "neither a branch nor a tag"
		if _, _, err := gh.Git.GetRef(ctx, t.Owner(), t.RepoName(), "tags/"+t.BaseBranch); err == nil {
			what = "a tag"
		} else if !githubapi.IsNotFound(err) {
			return fmt.Errorf("%s: targetRevision %s: %w", t.Repo, t.BaseBranch, err)
		}
		d.Skipped = append(d.Skipped, fmt.Sprintf("Argo CD Application %s/%s: its targetRevision %s is %s of %s, not a branch: the Application is pinned, and no pull request changes what it runs",
			app.Namespace, app.Name, t.BaseBranch, what, t.Repo))
	}
	d.Targets = keep
	return nil
}
