package config

import (
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"

	"fmt"
	"net"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
)

// MinPollInterval is the shortest pollInterval accepted: every poll lists
// the clusters and reads the repositories, so a shorter one mostly burns
// API rate limit.
const MinPollInterval = 10 * time.Second

var (
	nameRE      = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)
	ghOwnerRE   = regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?$`)
	ghRepoRE    = regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`)
	teamSlugRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)
	envNameRE   = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	kindRE      = regexp.MustCompile(`^[A-Z][A-Za-z0-9]*(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	namespaceRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)
	objNameRE   = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)
)

const nameRule = "use 1-63 lower-case letters, digits and '-', starting and ending with a letter or digit"

// validate checks the values of a decoded config. Paths that failed to
// decode are skipped (d.fail does that), so one mistake gives one error.
func (d *decoder) validate(c *Config) {
	d.validateGitHub(&c.GitHub)

	if d.present("pollInterval") && !d.isBad("pollInterval") && c.PollInterval < MinPollInterval {
		d.fail("pollInterval", "%s is below the minimum %s", d.nodes["pollInterval"].Value, MinPollInterval)
	}
	if d.present("listen") {
		d.checkListen("listen", c.Listen)
	}
	if d.present("instance") && !d.isBad("instance") && !nameRE.MatchString(c.Instance) {
		d.fail("instance", "%q is not a valid instance name; %s", c.Instance, nameRule)
	}

	clusters := map[string]string{} // name → its path
	if !d.present("clusters") {
		d.fail("clusters", "missing; list at least one cluster (name plus kubeconfig or inCluster: true)")
	} else if len(c.Clusters) == 0 {
		d.fail("clusters", "is empty; list at least one cluster (name plus kubeconfig or inCluster: true)")
	}
	for i := range c.Clusters {
		p := indexPath("clusters", i)
		cl := &c.Clusters[i]
		d.checkName(p+".name", cl.Name, "cluster", clusters)
		d.validateCluster(p, cl)
	}

	d.checkAppliers("defaults.appliers", c.Defaults.Appliers)
	d.checkIgnore("defaults.ignore", c.Defaults.Ignore)
	d.checkPullRequest("defaults.pullRequest", &c.Defaults.PullRequest)

	discovers := false
	for _, cl := range c.Clusters {
		discovers = discovers || cl.Discover != nil
	}
	switch {
	case discovers:
	case !d.present("targets"):
		d.fail("targets", "missing; list at least one target (name, repo, root, cluster, namespaces, appliedRevision), or let a cluster discover them")
	case len(c.Targets) == 0:
		d.fail("targets", "is empty; list at least one target (name, repo, root, cluster, namespaces, appliedRevision), or let a cluster discover them")
	}
	if discovers && c.GitHub.Owner == "" && !d.isBad("github") {
		d.fail("github", "set owner: discovered targets are the ones whose repository belongs to it")
	}
	targets := map[string]string{}
	for i := range c.Targets {
		d.validateTarget(c, indexPath("targets", i), &c.Targets[i], targets, clusters)
	}
	d.checkDashboards(c)
}

func (d *decoder) validateGitHub(g *GitHub) {
	if !d.present("github") {
		d.fail("github", "missing; set appID, privateKeyFile or privateKeyEnv, and installationID or owner")
		return
	}
	if !d.present("github.appID") {
		d.fail("github.appID", "missing; set the App ID shown on the GitHub App's settings page")
	} else if g.AppID <= 0 {
		d.fail("github.appID", "must be a positive number, got %d", g.AppID)
	}

	d.exactlyOne("github", "privateKeyFile", "privateKeyEnv")
	if d.present("github.privateKeyFile") {
		switch {
		case strings.Contains(g.PrivateKeyFile, "-----BEGIN"):
			d.fail("github.privateKeyFile", "holds a PEM key, not a file path; keep the key out of the config: put it in a file and give its path here")
		case strings.TrimSpace(g.PrivateKeyFile) == "":
			d.fail("github.privateKeyFile", "is empty; give the path of the App's PEM private key file")
		}
	}
	if d.present("github.privateKeyEnv") {
		switch {
		case strings.Contains(g.PrivateKeyEnv, "-----BEGIN"):
			d.fail("github.privateKeyEnv", "holds a PEM key, not a variable name; keep the key out of the config: put it in an environment variable and give its name here")
		case !envNameRE.MatchString(g.PrivateKeyEnv):
			d.fail("github.privateKeyEnv", "%q is not an environment variable name; use letters, digits and '_', not starting with a digit (e.g. DRIFTBACK_PRIVATE_KEY)", g.PrivateKeyEnv)
		}
	}

	if d.present("github.webhookSecretFile") && strings.TrimSpace(g.WebhookSecretFile) == "" {
		d.fail("github.webhookSecretFile", "is empty; give the path of the file holding the App's webhook secret, or leave the key out to only poll")
	}

	d.exactlyOne("github", "installationID", "owner")
	if d.present("github.installationID") && g.InstallationID <= 0 {
		d.fail("github.installationID", "must be a positive number, got %d", g.InstallationID)
	}
	if d.present("github.owner") && !ghOwnerRE.MatchString(g.Owner) {
		d.fail("github.owner", "%q is not a GitHub user or organisation name (letters, digits and '-', at most 39)", g.Owner)
	}

	if d.present("github.apiURL") {
		u, err := url.Parse(g.APIURL)
		switch {
		case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
			d.fail("github.apiURL", "%q is not an http(s) URL; use https://api.github.com/ or, for GitHub Enterprise Server, https://HOST/api/v3/", g.APIURL)
		case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
			d.fail("github.apiURL", "%q: give only scheme, host and path (no query, fragment or credentials)", g.APIURL)
		}
	}
}

// exactlyOne checks that exactly one of the keys a and b is set in the
// mapping at parent.
func (d *decoder) exactlyOne(parent, a, b string) {
	pa, pb := childPath(parent, a), childPath(parent, b)
	hasA, hasB := d.present(pa), d.present(pb)
	switch {
	case hasA && hasB:
		later := pb
		if d.line(pa) > d.line(pb) {
			later = pa
		}
		d.failKey(later, parent, "set exactly one of %s or %s, not both", a, b)
	case !hasA && !hasB && !d.anySuggested(pa, pb):
		d.fail(parent, "set exactly one of %s or %s (neither is set)", a, b)
	}
}

// anySuggested reports whether a misspelt key was taken to mean one of
// paths.
func (d *decoder) anySuggested(paths ...string) bool {
	for _, p := range paths {
		if d.suggested[p] {
			return true
		}
	}
	return false
}

func (d *decoder) checkListen(p, addr string) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		d.fail(p, "%q is not host:port; write \":8080\" to listen on every interface", addr)
		return
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		d.fail(p, "%q: the port must be a number from 0 to 65535", addr)
	}
}

// checkName checks a cluster or target name and that it is unique; seen
// maps names already used to their paths.
func (d *decoder) checkName(p, name, what string, seen map[string]string) {
	if d.isBad(p) {
		return
	}
	if !d.present(p) {
		d.fail(p, "missing; every %s needs a name (%s)", what, nameRule)
		return
	}
	if !nameRE.MatchString(name) {
		d.fail(p, "%q is not a valid %s name; %s", name, what, nameRule)
		return
	}
	if first, dup := seen[name]; dup {
		d.fail(p, "%q is used twice (first at line %d); %s names must be unique", name, d.line(first), what)
		return
	}
	seen[name] = p
}

func (d *decoder) validateCluster(p string, cl *Cluster) {
	pk, pi := p+".kubeconfig", p+".inCluster"
	inCluster := d.present(pi) && cl.InCluster
	switch {
	case d.present(pk) && inCluster:
		d.failKey(pi, p, "set exactly one of kubeconfig or inCluster: true, not both")
	case !d.present(pk) && !inCluster && !d.isBad(pi) && !d.anySuggested(pk, pi):
		d.fail(p, "set exactly one of kubeconfig (a file path) or inCluster: true")
	}
	if d.present(pk) && strings.TrimSpace(cl.Kubeconfig) == "" {
		d.fail(pk, "is empty; give the path of a kubeconfig file")
	}
	if d.present(p+".context") && !d.present(pk) {
		d.failKey(p+".context", p+".context", "only applies with kubeconfig; an in-cluster connection has no contexts")
	}
	if d.present(p+".qps") && cl.QPS < 1 {
		d.fail(p+".qps", "must be a positive number, got %d", cl.QPS)
	}
	if d.present(p+".burst") && cl.Burst < 1 {
		d.fail(p+".burst", "must be a positive number, got %d", cl.Burst)
	}
	if a := cl.Audit; a != nil {
		d.checkAudit(p+".audit", a)
	}
	if ds := cl.Discover; ds != nil {
		if !ds.Flux && !ds.ArgoCD {
			d.fail(p+".discover", "set flux: true, argocd: true or both")
		}
		if ds.Selector != "" {
			if _, err := labels.Parse(ds.Selector); err != nil {
				d.fail(p+".discover.selector", "is not a label selector: %v", err)
			}
		}
	}
}

// checkAudit checks a cluster's audit source at p: at least one way in,
// and each cluster user mapped to one GitHub login.
func (d *decoder) checkAudit(p string, a *Audit) {
	if strings.TrimSpace(a.LogFile) == "" && strings.TrimSpace(a.WebhookTokenFile) == "" && !d.isBad(p+".logFile") && !d.isBad(p+".webhookTokenFile") {
		d.fail(p, "set logFile (the audit log's path), webhookTokenFile (the audit webhook's token), or both")
	}
	if d.present(p+".keep") && a.Keep < 1 {
		d.fail(p+".keep", "must be a positive number, got %d", a.Keep)
	}
	seen := map[string]string{}
	for i, u := range a.GitHubUsers {
		pu := fmt.Sprintf("%s.githubUsers[%d]", p, i)
		if first, dup := seen[u.User]; dup && u.User != "" {
			d.fail(pu+".user", "%q is mapped twice (first at line %d); a cluster user has one GitHub login", u.User, d.line(first))
		}
		seen[u.User] = pu + ".user"
		if !ghOwnerRE.MatchString(u.Login) {
			d.fail(pu+".login", "%q is not a GitHub login (letters, digits and '-', at most 39)", u.Login)
		}
	}
}

func (d *decoder) validateTarget(c *Config, p string, t *Target, targets, clusters map[string]string) {
	d.checkName(p+".name", t.Name, "target", targets)
	d.checkTargetRepo(p+".repo", t.Repo, c.GitHub.Owner)
	if d.present(p + ".baseBranch") {
		if err := checkRef(t.BaseBranch); err != nil {
			d.fail(p+".baseBranch", "%q is not a valid branch name: %v", t.BaseBranch, err)
		}
	}
	d.checkTargetFolders(p, t)
	d.checkTargetCluster(p+".cluster", t.Cluster, clusters)
	d.checkTargetNamespaces(p, t)
	d.checkTargetKinds(p+".kinds", &t.Kinds)
	d.validateRevision(p+".appliedRevision", &t.AppliedRevision, t.Root)
	d.checkAppliers(p+".appliers", t.Appliers)
	d.checkIgnore(p+".ignore", t.Ignore)
	if t.PullRequest != nil {
		d.checkPullRequest(p+".pullRequest", t.PullRequest)
	}
}

// checkTargetRepo checks a target's repo at pr: owner/name, and owned by
// github.owner when that is set (one installation covers one account).
func (d *decoder) checkTargetRepo(pr, repo, ghOwner string) {
	if !d.present(pr) {
		d.fail(pr, "missing; set the GitHub repository as owner/name")
	} else if owner, name, ok := strings.Cut(repo, "/"); !ok || !ghOwnerRE.MatchString(owner) || !ghRepoRE.MatchString(name) || name == "." || name == ".." {
		hint := ""
		if strings.Contains(repo, "://") || strings.HasPrefix(repo, "git@") {
			hint = " (not a URL)"
		}
		d.fail(pr, "%q is not owner/name%s; write the repository as in github.com/OWNER/NAME, e.g. my-org/shop", repo, hint)
	} else if d.present("github.owner") && !strings.EqualFold(owner, ghOwner) {
		d.fail(pr, "owner %q differs from github.owner %q; one installation covers one account, so every repository must belong to %s", owner, ghOwner, ghOwner)
	}
}

// checkTargetFolders checks the target's root (required) and writeScope,
// which must keep driftback out of the CI workflows.
func (d *decoder) checkTargetFolders(p string, t *Target) {
	if pr := p + ".root"; !d.present(pr) {
		d.fail(pr, "missing; set the repository folder of the kustomize root (\".\" for the repository root), or the file of a Flux HelmRelease")
	} else {
		d.checkRepoPath(pr, t.Root)
	}
	if pw := p + ".writeScope"; d.present(pw) {
		d.checkRepoPath(pw, t.WriteScope)
		if w := path.Clean(t.WriteScope); w == ".github" || w == ".github/workflows" || strings.HasPrefix(w, ".github/workflows/") {
			d.fail(pw, "%q: driftback never writes under .github/workflows/; choose the folder holding your manifests", t.WriteScope)
		}
	}
}

// checkTargetCluster checks that the target's cluster at pc names one of
// clusters; if the clusters themselves failed to decode, that error stands
// alone.
func (d *decoder) checkTargetCluster(pc, cluster string, clusters map[string]string) {
	if !d.present(pc) {
		d.fail(pc, "missing; name one of the clusters (%s)", clusterNames(clusters))
	} else if _, ok := clusters[cluster]; !ok && !d.badUnder("clusters") {
		if len(clusters) == 0 {
			d.fail(pc, "%q names no cluster; no cluster is defined", cluster)
		} else {
			d.fail(pc, "%q names no cluster; clusters are: %s", cluster, clusterNames(clusters))
		}
	}
}

// checkTargetNamespaces checks that the target says where to look
// (namespaces, namespaceSelector or both) and that what it says is valid.
func (d *decoder) checkTargetNamespaces(p string, t *Target) {
	hasNS := d.present(p+".namespaces") && len(t.Namespaces) > 0
	hasSel := d.present(p+".namespaceSelector") && strings.TrimSpace(t.NamespaceSelector) != ""
	if !hasNS && !hasSel && !d.isBad(p+".namespaces") && !d.isBad(p+".namespaceSelector") && !d.anySuggested(p+".namespaces", p+".namespaceSelector") {
		d.fail(p, "set namespaces, namespaceSelector or both to say where to look (namespaceSelector: kubernetes.io/metadata.name selects every namespace)")
	}
	d.checkList(p+".namespaces", t.Namespaces, func(s string) string {
		if !namespaceRE.MatchString(s) {
			return fmt.Sprintf("%q is not a namespace name; %s", s, nameRule)
		}
		return ""
	})
	if hasSel {
		if err := checkSelector(t.NamespaceSelector); err != nil {
			d.fail(p+".namespaceSelector", "%q is not a label selector: %v; examples: team=shop, env in (prod,staging), !legacy", t.NamespaceSelector, err)
		}
	}
}

// checkTargetKinds checks the kinds.include and kinds.exclude lists at pk,
// and that no kind is in both.
func (d *decoder) checkTargetKinds(pk string, kinds *Kinds) {
	kindCheck := func(s string) string {
		if !kindRE.MatchString(s) {
			return fmt.Sprintf("%q is not a kind; write Kind or Kind.group, e.g. Deployment, Deployment.apps, Kustomization.kustomize.toolkit.fluxcd.io", s)
		}
		return ""
	}
	d.checkList(pk+".include", kinds.Include, kindCheck)
	d.checkList(pk+".exclude", kinds.Exclude, kindCheck)
	included := map[string]bool{}
	for _, k := range kinds.Include {
		included[k] = true
	}
	for i, k := range kinds.Exclude {
		if included[k] {
			d.fail(indexPath(pk+".exclude", i), "%q is both included and excluded; keep it in one list", k)
		}
	}
}

func clusterNames(clusters map[string]string) string {
	if len(clusters) == 0 {
		return "none is defined"
	}
	return strings.Join(sortedKeys(clusters), ", ")
}

// validateRevision checks that exactly one applied-revision source is set,
// and that helmRelease is set only for a root that is a file (a
// HelmRelease's YAML manifest): a folder is kustomize's.
func (d *decoder) validateRevision(p string, rev *AppliedRevision, root string) {
	if !d.present(p) {
		d.fail(p, "missing; set exactly one of flux: {namespace, name} (a Flux Kustomization), argocd: {namespace, name} (an Argo CD Application), helmRelease: {namespace, name} (a Flux HelmRelease whose file is the root) or head: true")
		return
	}
	if d.isBad(p) {
		return
	}
	if d.present(p+".head") && !rev.Head {
		d.fail(p+".head", "false says nothing; set head: true to compare against the branch head, or set flux, argocd or helmRelease instead")
		return
	}
	var set []string
	for _, k := range []string{"flux", "argocd", "helmRelease", "head"} {
		if d.present(p + "." + k) {
			set = append(set, k)
		}
	}
	switch len(set) {
	case 0:
		if !d.anySuggested(p+".flux", p+".argocd", p+".helmRelease", p+".head") {
			d.fail(p, "set exactly one of flux, argocd, helmRelease or head: true (none is set)")
		}
	case 1:
		switch set[0] {
		case "flux":
			d.checkObjectRef(p+".flux", rev.Flux, "the Flux Kustomization")
		case "argocd":
			d.checkObjectRef(p+".argocd", rev.ArgoCD, "the Argo CD Application")
		case "helmRelease":
			d.checkObjectRef(p+".helmRelease", rev.HelmRelease, "the Flux HelmRelease")
			if ext := path.Ext(root); root != "" && ext != ".yaml" && ext != ".yml" {
				d.fail(p+".helmRelease", "root %q is a folder; helmRelease is for a root that is a HelmRelease's YAML file (root: clusters/prod/web/helmrelease.yaml): for a kustomize folder set flux, argocd or head", root)
			}
		}
	default:
		d.failKey(p+"."+set[len(set)-1], p, "set exactly one of flux, argocd, helmRelease or head, not %s", strings.Join(set, " and "))
	}
}

func (d *decoder) checkObjectRef(p string, ref *kube.ObjectRef, what string) {
	if d.isBad(p) || ref == nil {
		return
	}
	if !d.present(p + ".namespace") {
		d.fail(p+".namespace", "missing; set the namespace of %s", what)
	} else if !namespaceRE.MatchString(ref.Namespace) {
		d.fail(p+".namespace", "%q is not a namespace name; %s", ref.Namespace, nameRule)
	}
	if !d.present(p + ".name") {
		d.fail(p+".name", "missing; set the name of %s", what)
	} else if !objNameRE.MatchString(ref.Name) {
		d.fail(p+".name", "%q is not an object name; use lower-case letters, digits, '-' and '.'", ref.Name)
	}
}

// checkList reports empty and repeated entries of a string list, and the
// message of check for each bad entry.
func (d *decoder) checkList(p string, list []string, check func(string) string) {
	if d.isBad(p) {
		return
	}
	seen := map[string]int{}
	for i, s := range list {
		ip := indexPath(p, i)
		if d.isBad(ip) {
			continue
		}
		if strings.TrimSpace(s) == "" {
			d.fail(ip, "empty entry; remove it")
			continue
		}
		if first, dup := seen[s]; dup {
			d.fail(ip, "%q is listed twice (first at line %d)", s, d.line(indexPath(p, first)))
			continue
		}
		seen[s] = i
		if check != nil {
			if msg := check(s); msg != "" {
				d.fail(ip, "%s", msg)
			}
		}
	}
}

func (d *decoder) checkAppliers(p string, appliers []string) {
	if d.present(p) && len(appliers) == 0 && !d.isBad(p) {
		d.fail(p, "is empty; name at least one field manager, or leave appliers out for the defaults")
		return
	}
	d.checkList(p, appliers, func(s string) string {
		if strings.ContainsAny(s, " \t\n") {
			return fmt.Sprintf("%q: a field manager name has no spaces", s)
		}
		return ""
	})
}

func (d *decoder) checkIgnore(p string, rules []kube.IgnoreRule) {
	for i, r := range rules {
		ip := indexPath(p, i)
		if d.isBad(ip) {
			continue
		}
		if d.present(ip+".kind") && !kindRE.MatchString(r.Kind) {
			d.fail(ip+".kind", "%q is not a kind; write Kind or Kind.group, e.g. Deployment or HorizontalPodAutoscaler.autoscaling, or leave kind out for every kind", r.Kind)
		}
		if !d.present(ip + ".path") {
			d.fail(ip+".path", "missing; name the field to ignore as driftback prints it, e.g. spec.replicas")
		} else if _, err := jsonvalue.ParsePath(r.Path); err != nil {
			d.fail(ip+".path", "%q is not a field path: %v; write it as driftback prints it, e.g. spec.replicas, spec.template.spec.containers[app].image, metadata.annotations[\"example.com/x\"]", r.Path, err)
		}
		if d.present(ip+".manager") && strings.TrimSpace(r.Manager) == "" {
			d.fail(ip+".manager", "is empty; name a field manager or leave manager out")
		}
	}
}

func (d *decoder) checkPullRequest(p string, pr *PullRequest) {
	if d.isBad(p) {
		return
	}
	if bp := p + ".branchPrefix"; d.present(bp) {
		if err := checkRef(pr.BranchPrefix + "x"); err != nil || strings.TrimSpace(pr.BranchPrefix) == "" {
			if err == nil {
				err = fmt.Errorf("it is empty")
			}
			d.fail(bp, "%q cannot start a branch name: %v", pr.BranchPrefix, err)
		}
	}
	d.checkList(p+".labels", pr.Labels, func(s string) string {
		if len([]rune(s)) > 50 {
			return fmt.Sprintf("%q is longer than GitHub's 50 characters for a label", s)
		}
		return ""
	})
	d.checkList(p+".reviewers", pr.Reviewers, func(s string) string {
		if login, ok := strings.CutPrefix(s, "@"); ok {
			return fmt.Sprintf("%q: write the login without @ (%s)", s, login)
		}
		if strings.Contains(s, "/") {
			return fmt.Sprintf("%q looks like a team; put team slugs under teamReviewers", s)
		}
		if !ghOwnerRE.MatchString(s) {
			return fmt.Sprintf("%q is not a GitHub login (letters, digits and '-', at most 39)", s)
		}
		return ""
	})
	d.checkList(p+".teamReviewers", pr.TeamReviewers, func(s string) string {
		s = strings.TrimPrefix(s, "@")
		if _, slug, ok := strings.Cut(s, "/"); ok {
			return fmt.Sprintf("%q: write only the team slug (%s); the team must belong to the repository's organisation", s, slug)
		}
		if !teamSlugRE.MatchString(s) {
			return fmt.Sprintf("%q is not a team slug (lower-case letters, digits, '-' and '_', as in the team's URL)", s)
		}
		return ""
	})
}

// checkRepoPath checks a repository-relative folder: no absolute paths, no
// .., forward slashes only.
func (d *decoder) checkRepoPath(p, v string) {
	switch {
	case strings.TrimSpace(v) == "":
		d.fail(p, "is empty; give a folder relative to the repository root (\".\" for the root itself)")
	case strings.Contains(v, "\\"):
		d.fail(p, "%q: separate folders with /, not \\", v)
	case strings.HasPrefix(v, "/"):
		d.fail(p, "%q is absolute; give a folder relative to the repository root, e.g. %s", v, strings.TrimLeft(v, "/"))
	case strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		d.fail(p, "%q holds control characters", v)
	default:
		for _, seg := range strings.Split(v, "/") {
			if seg == ".." {
				d.fail(p, "%q leaves the folder it starts from (..); give a folder inside the repository, relative to its root", v)
				return
			}
		}
		if strings.Contains(v, "://") {
			d.fail(p, "%q looks like a URL; give a folder inside the repository", v)
		}
	}
}

// checkRef applies the rules of git check-ref-format to a branch name.
func checkRef(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("it is empty")
	case strings.HasPrefix(s, "-"):
		return fmt.Errorf("it starts with '-'")
	case strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/"):
		return fmt.Errorf("it starts or ends with '/'")
	case strings.Contains(s, ".."):
		return fmt.Errorf("it contains '..'")
	case strings.Contains(s, "//"):
		return fmt.Errorf("it contains '//'")
	case strings.Contains(s, "@{") || s == "@":
		return fmt.Errorf("it contains '@{'")
	case strings.HasSuffix(s, ".") || strings.HasSuffix(s, ".lock"):
		return fmt.Errorf("it ends with '.' or '.lock'")
	case strings.HasPrefix(s, "refs/"):
		return fmt.Errorf("give the branch name without refs/heads/")
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f || strings.ContainsRune("~^:?*[\\", r) {
			return fmt.Errorf("it contains %q", r)
		}
	}
	for _, seg := range strings.Split(s, "/") {
		if strings.HasPrefix(seg, ".") {
			return fmt.Errorf("a component starts with '.'")
		}
	}
	return nil
}
