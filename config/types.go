package config

import (
	"time"

	"github.com/driftback/driftback/internal/kube"
)

// The doc comment of every type and field below is also its description in
// the JSON Schema: Schema parses this file (embedded into the binary) and
// copies the comments, so write them for the person editing driftback.yaml.
//
// Tags: yaml and json carry the key and must agree; schema carries extra
// JSON Schema keywords separated by ";" (see schema.go); aka lists keys
// people coming from Flux, Argo CD or Renovate tend to write instead, for
// the "did you mean" hints.

// Config is the whole driftback.yaml file.
type Config struct {
	// How driftback authenticates as a GitHub App.
	GitHub GitHub `yaml:"github" json:"github" schema:"required"`
	// Name of this driftback installation. Everything it writes carries it
	// (the pull request's hidden state, the commit's Driftback-Instance
	// trailer, the check run's external_id, and, unless it is "default",
	// the check run's name: "driftback/TARGET (NAME)"), and it never
	// closes, pushes to or deletes a pull request or branch another
	// installation wrote: it reports the overlap instead (a neutral check
	// run naming the other, the log, driftback_target_overlap). A pull
	// request is its own only when this App's bot opened it and its state
	// names this instance, so two driftback Apps are safe at the default.
	// Replicas of one installation share it. Two deployments of one App
	// left at one name (two clusters, two namespaces) tell each other
	// apart by the deployment each stamps beside it (its cluster and lease
	// namespace): one stands back for a target the other wrote within the
	// last 24 hours and says so; give them different names.
	// Lower-case letters, digits and '-', at most 63 characters. Default
	// "default", which also owns what earlier versions wrote (they stamped
	// nothing).
	Instance string `yaml:"instance,omitempty" json:"instance,omitempty" schema:"pattern=^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$;default=default" aka:"identity,installation,instanceName,name"`
	// How often every target is compared with its cluster, as a Go duration
	// (30s, 1m, 1h30m). Minimum 10s; default 1m.
	PollInterval time.Duration `yaml:"pollInterval,omitempty" json:"pollInterval,omitempty" schema:"default=1m" aka:"interval,syncInterval,pollingInterval"`
	// Address of the HTTP server for /healthz, /readyz, /metrics and (with
	// github.webhookSecretFile) /webhook, as host:port. Default ":8080".
	Listen string `yaml:"listen,omitempty" json:"listen,omitempty" schema:"default=:8080" aka:"address,addr,metricsAddress"`
	// The Kubernetes clusters targets read live objects from.
	Clusters []Cluster `yaml:"clusters" json:"clusters" schema:"required;minItems=1" aka:"cluster"`
	// Settings every target inherits unless it sets its own.
	Defaults Defaults `yaml:"defaults,omitempty" json:"defaults,omitempty" aka:"default"`
	// What to compare: one entry per kustomize root, each with its own pull
	// request. May be empty when some cluster discovers its targets; a
	// target written here wins over a discovered one for the same object.
	Targets []Target `yaml:"targets,omitempty" json:"targets,omitempty" aka:"target,apps,applications"`
	// Repositories (owner/name) that get a drift dashboard: one GitHub
	// issue per repository, kept current, with a row per target of that
	// repository (in sync, pull request open, waiting, drift the GitOps
	// tool will restore, frozen, failing since when). Written only when a
	// row changes; found by a hidden marker, never by its title; text a
	// person adds outside the marked block is kept, and a dashboard a
	// person closes stays closed (reopen it to resume). The App needs the
	// issues: write permission (driftback app create --dashboard asks for
	// it); without it the log says so, again each hour, and the targets'
	// polls go on.
	Dashboards []string `yaml:"dashboards,omitempty" json:"dashboards,omitempty" schema:"uniqueItems;itemPattern=^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?/[A-Za-z0-9._-]+$" aka:"dashboard,dependencyDashboard,driftDashboard"`
}

// GitHub is the GitHub App identity. The private key itself never goes into
// the config file: name a file or an environment variable that holds it.
type GitHub struct {
	// The App ID shown on the GitHub App's settings page.
	AppID int64 `yaml:"appID" json:"appID" schema:"required;minimum=1" aka:"appId,app_id,applicationID"`
	// Path of the PEM private key file of the App. Set exactly one of
	// privateKeyFile and privateKeyEnv.
	PrivateKeyFile string `yaml:"privateKeyFile,omitempty" json:"privateKeyFile,omitempty" schema:"minLength=1" aka:"keyFile,privateKeyPath"`
	// Name of the environment variable holding the PEM private key of the App.
	// Set exactly one of privateKeyFile and privateKeyEnv.
	PrivateKeyEnv string `yaml:"privateKeyEnv,omitempty" json:"privateKeyEnv,omitempty" schema:"pattern=^[A-Za-z_][A-Za-z0-9_]*$" aka:"keyEnv"`
	// The installation to act as. Set exactly one of installationID and
	// owner.
	InstallationID int64 `yaml:"installationID,omitempty" json:"installationID,omitempty" schema:"minimum=1" aka:"installationId,installation_id,installation"`
	// The user or organisation the App is installed on; driftback looks the
	// installation up. Set exactly one of installationID and owner. Every
	// target's repository must belong to this owner.
	Owner string `yaml:"owner,omitempty" json:"owner,omitempty" schema:"pattern=^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?$" aka:"org,organization,account"`
	// Path of a file holding the App's webhook secret (a Secret mounted as
	// a file), with which GitHub signs its deliveries: one line, or two
	// while the secret is rotated (a delivery signed with either is taken).
	// Set, driftback serves /webhook and a delivery (check_run,
	// check_suite, pull_request, push) wakes the targets it concerns at
	// once; unset, it only polls. Read at start and again whenever the
	// file changes.
	WebhookSecretFile string `yaml:"webhookSecretFile,omitempty" json:"webhookSecretFile,omitempty" schema:"minLength=1" aka:"webhookSecretPath,hookSecretFile"`
	// Base URL of the GitHub REST API. Default https://api.github.com/; for
	// GitHub Enterprise Server use https://HOST/api/v3/.
	APIURL string `yaml:"apiURL,omitempty" json:"apiURL,omitempty" schema:"format=uri;default=https://api.github.com/" aka:"apiUrl,baseURL,baseUrl,url,endpoint"`
}

// Cluster is one Kubernetes cluster driftback reads from.
type Cluster struct {
	// Name targets use to refer to this cluster. Lower-case letters, digits
	// and '-', at most 63 characters.
	Name string `yaml:"name" json:"name" schema:"required;pattern=^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"`
	// Path of a kubeconfig file. Set exactly one of kubeconfig and inCluster.
	Kubeconfig string `yaml:"kubeconfig,omitempty" json:"kubeconfig,omitempty" schema:"minLength=1" aka:"kubeConfig,kubeconfigPath,config"`
	// Context in the kubeconfig to use; default its current context. Only
	// with kubeconfig.
	Context string `yaml:"context,omitempty" json:"context,omitempty" schema:"minLength=1" aka:"kubeContext,contextName"`
	// Use the service account driftback runs as (driftback deployed in this
	// cluster). Set exactly one of kubeconfig and inCluster.
	InCluster bool `yaml:"inCluster,omitempty" json:"inCluster,omitempty" aka:"incluster,in_cluster,inClusterConfig"`
	// Requests per second driftback may send this cluster's API server,
	// sustained. A poll reads each kind once for all targets, so this
	// bounds how long a poll waits on the cluster, not how many requests
	// it makes. Default 20.
	QPS int64 `yaml:"qps,omitempty" json:"qps,omitempty" schema:"minimum=1;default=20" aka:"QPS,kubeAPIQPS,rateLimit"`
	// Requests driftback may send this cluster's API server at once before
	// qps paces them. Default 40.
	Burst int64 `yaml:"burst,omitempty" json:"burst,omitempty" schema:"minimum=1;default=40" aka:"kubeAPIBurst"`
	// Make a target of every Flux Kustomization and Argo CD Application in
	// this cluster that renders a repository of github.owner, instead of (or
	// besides) listing targets. Each compares exactly the objects its
	// inventory lists, at the revision it applied, with the defaults.
	Discover *Discover `yaml:"discover,omitempty" json:"discover,omitempty" aka:"discovery,autodiscover"`
	// Read this cluster's audit log, so each proposed edit names the user
	// who made the write (user, groups, impersonated user, user agent)
	// beside the field manager. Optional.
	Audit *Audit `yaml:"audit,omitempty" json:"audit,omitempty" aka:"auditLog,auditing"`
}

// Audit says where a cluster's audit events reach driftback. Only each
// request's metadata is kept, never a request or response body. Set
// logFile, webhookTokenFile, or both.
type Audit struct {
	// Path of the API server's audit log (the log backend's
	// --audit-log-path: JSON lines), readable by driftback. Read where it
	// grew at each poll; after a start or a rotation, its newest 64 MiB.
	LogFile string `yaml:"logFile,omitempty" json:"logFile,omitempty" schema:"minLength=1" aka:"path,logPath,auditLogPath,file"`
	// Path of a file holding the bearer token of the API server's audit
	// webhook backend. With it, the listener accepts the backend's posts
	// at /audit/CLUSTER (this cluster's name); a post without that token is
	// refused. Re-read on every post, so a rotated token takes effect at
	// once.
	WebhookTokenFile string `yaml:"webhookTokenFile,omitempty" json:"webhookTokenFile,omitempty" schema:"minLength=1" aka:"tokenFile,webhookToken,token"`
	// How many writes to remember, the newest kept. A write older than the
	// oldest remembered one is shown without its user. Default 20000.
	Keep int64 `yaml:"keep,omitempty" json:"keep,omitempty" schema:"minimum=1;default=20000" aka:"retain,retention,maxEvents,size"`
	// States that these sources carry every write the cluster's API
	// servers accept: one API server (or a log file that gathers every API
	// server's events), and for the webhook, one driftback replica taking
	// its posts. Only then does an edit name the user behind its write; a
	// trail that may miss writes can name the wrong person, so without it
	// edits say "cannot tell who".
	Complete bool `yaml:"complete,omitempty" json:"complete,omitempty" aka:"whole,single,allWrites,everyWrite"`
	// Cluster users who are GitHub users: the commit recording a change
	// one of them made carries a Co-authored-by trailer naming them, so
	// GitHub shows them as the commit's co-author.
	GitHubUsers []GitHubUser `yaml:"githubUsers,omitempty" json:"githubUsers,omitempty" aka:"coAuthors,users,userMap,githubLogins"`
}

// GitHubUser maps a cluster user to a GitHub account.
type GitHubUser struct {
	// The user as the audit log names them (user.username).
	User string `yaml:"user" json:"user" schema:"required;minLength=1" aka:"username,clusterUser,name"`
	// Their GitHub login.
	Login string `yaml:"login" json:"login" schema:"required;pattern=^[A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?$" aka:"github,githubLogin"`
}

// Discover says which GitOps objects of a cluster become targets.
type Discover struct {
	// Read Flux Kustomizations (kustomize.toolkit.fluxcd.io/v1) and their
	// GitRepository sources.
	Flux bool `yaml:"flux,omitempty" json:"flux,omitempty" aka:"fluxcd,kustomizations"`
	// Read Argo CD Applications (argoproj.io/v1alpha1).
	ArgoCD bool `yaml:"argocd,omitempty" json:"argocd,omitempty" aka:"argoCD,argo,applications"`
	// Only objects in these namespaces; every namespace when empty.
	Namespaces []string `yaml:"namespaces,omitempty" json:"namespaces,omitempty" schema:"uniqueItems" aka:"namespace"`
	// Only objects with these labels, as a label selector (team=shop).
	Selector string `yaml:"selector,omitempty" json:"selector,omitempty" aka:"labelSelector"`
	// Only objects with these names; every name when empty.
	Names []string `yaml:"names,omitempty" json:"names,omitempty" schema:"uniqueItems" aka:"name"`
}

// Defaults are inherited by every target. A target's own appliers,
// pullRequest fields and failOnRefusal replace them; its ignore rules are
// added to them.
type Defaults struct {
	// Field managers that count as the GitOps applier: a live field owned
	// only by one of them and absent from the render is a server default and
	// is dropped. Default: kustomize-controller, argocd-controller,
	// argocd-application-controller, kubectl, kubectl-client-side-apply,
	// helm, helm-controller.
	Appliers []string `yaml:"appliers,omitempty" json:"appliers,omitempty" schema:"minItems=1;uniqueItems" aka:"managers,fieldManagers"`
	// Live fields never proposed back to Git (for example spec.replicas of a
	// Deployment an HPA scales).
	Ignore []kube.IgnoreRule `yaml:"ignore,omitempty" json:"ignore,omitempty" aka:"ignores,ignoreDifferences,ignored"`
	// How pull requests are opened.
	PullRequest PullRequest `yaml:"pullRequest,omitempty" json:"pullRequest,omitempty" aka:"pr,pull_request,pullRequests"`
	// Conclusion of the check run when some drift is refused: failure (true,
	// the default) or neutral (false).
	FailOnRefusal *bool `yaml:"failOnRefusal,omitempty" json:"failOnRefusal,omitempty" schema:"default=true" aka:"failOnRefusals"`
	// Also propose drift that the GitOps tool will put back on its own (an
	// active Flux Kustomization, an Argo CD Application with self-heal), to
	// capture a hotfix before the tool erases it; the pull request then
	// warns when the tool will act. Default false: the check run reports
	// such drift and no pull request is opened for it.
	ProposeRestored *bool `yaml:"proposeRestored,omitempty" json:"proposeRestored,omitempty" schema:"default=false" aka:"proposeRestoredDrift,captureRestored"`
}

// PullRequest says how driftback opens the pull request of a target. In a
// target, each field that is set replaces the default; an empty list ([])
// clears it.
type PullRequest struct {
	// Prefix of the branch name; the branch is PREFIX + target name. Default
	// "driftback/".
	BranchPrefix string `yaml:"branchPrefix,omitempty" json:"branchPrefix,omitempty" schema:"minLength=1;default=driftback/" aka:"branch,prefix,branchName"`
	// Labels put on the pull request. They must exist in the repository.
	Labels []string `yaml:"labels,omitempty" json:"labels,omitempty" schema:"uniqueItems" aka:"label"`
	// GitHub logins asked to review (without @).
	Reviewers []string `yaml:"reviewers,omitempty" json:"reviewers,omitempty" schema:"uniqueItems" aka:"reviewer,assignees"`
	// Slugs of teams in the repository's organisation asked to review.
	TeamReviewers []string `yaml:"teamReviewers,omitempty" json:"teamReviewers,omitempty" schema:"uniqueItems" aka:"teams,team_reviewers"`
	// Open the pull request as a draft. Default false.
	Draft *bool `yaml:"draft,omitempty" json:"draft,omitempty" schema:"default=false"`
}

// Target is one root (a kustomize folder or a HelmRelease file) in one
// repository compared with one cluster.
type Target struct {
	// Unique name of the target: lower-case letters, digits and '-', at most
	// 63 characters. It names the branch (driftback/NAME) and the check run.
	Name string `yaml:"name" json:"name" schema:"required;pattern=^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"`
	// The GitHub repository, as owner/name.
	Repo string `yaml:"repo" json:"repo" schema:"required;pattern=^[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?/[A-Za-z0-9._-]+$" aka:"repository,repoURL,url"`
	// Branch the GitOps tool deploys from and pull requests target. Default:
	// the repository's default branch.
	BaseBranch string `yaml:"baseBranch,omitempty" json:"baseBranch,omitempty" schema:"minLength=1" aka:"branch,targetRevision,ref,base"`
	// Repository-relative folder of the kustomize root the cluster runs
	// (the folder holding kustomization.yaml); "." for the repository root.
	// Or a YAML file holding one Flux HelmRelease whose chart is a folder
	// of the same repository: Helm renders it.
	Root string `yaml:"root" json:"root" schema:"required;minLength=1" aka:"path,dir,directory,kustomization"`
	// Repository-relative folder driftback may write to; default the whole
	// repository. A file other roots read is never written. A value that
	// lies outside it is overridden in the root's own folder when that
	// folder is inside it, else refused (out-of-scope).
	WriteScope string `yaml:"writeScope,omitempty" json:"writeScope,omitempty" schema:"minLength=1" aka:"scope,writePath"`
	// Name of the cluster (from clusters) this target runs in.
	Cluster string `yaml:"cluster" json:"cluster" schema:"required;minLength=1" aka:"clusterName,destination"`
	// Namespaces whose objects are compared. Set namespaces, namespaceSelector
	// or both (an object is compared when its namespace is listed or matches
	// the selector).
	Namespaces []string `yaml:"namespaces,omitempty" json:"namespaces,omitempty" schema:"uniqueItems" aka:"namespace"`
	// Label selector over namespaces (team=shop, env in (prod,staging),
	// !legacy). kubernetes.io/metadata.name selects every namespace.
	NamespaceSelector string `yaml:"namespaceSelector,omitempty" json:"namespaceSelector,omitempty" aka:"selector"`
	// Which kinds of objects are compared.
	Kinds Kinds `yaml:"kinds,omitempty" json:"kinds,omitempty" aka:"kind,resources"`
	// Where to read the Git revision the cluster runs. Set exactly one of
	// flux, argocd, helmRelease or head.
	AppliedRevision AppliedRevision `yaml:"appliedRevision" json:"appliedRevision" schema:"required" aka:"revision,source,appliedRevisionSource"`
	// Field managers that count as the GitOps applier; replaces
	// defaults.appliers.
	Appliers []string `yaml:"appliers,omitempty" json:"appliers,omitempty" schema:"minItems=1;uniqueItems" aka:"managers,fieldManagers"`
	// Live fields never proposed back to Git; added to defaults.ignore.
	Ignore []kube.IgnoreRule `yaml:"ignore,omitempty" json:"ignore,omitempty" aka:"ignores,ignoreDifferences,ignored"`
	// Pull request settings; each field set here replaces the one in
	// defaults.pullRequest.
	PullRequest *PullRequest `yaml:"pullRequest,omitempty" json:"pullRequest,omitempty" aka:"pr,pull_request,pullRequests"`
	// Check run conclusion when drift is refused: failure (true) or neutral
	// (false); replaces defaults.failOnRefusal.
	FailOnRefusal *bool `yaml:"failOnRefusal,omitempty" json:"failOnRefusal,omitempty" aka:"failOnRefusals"`
	// Also propose drift the GitOps tool will put back on its own;
	// replaces defaults.proposeRestored.
	ProposeRestored *bool `yaml:"proposeRestored,omitempty" json:"proposeRestored,omitempty" aka:"proposeRestoredDrift,captureRestored"`
}

// Kinds filters objects by kind. An entry is Kind (that kind in any API
// group) or Kind.group (Deployment.apps, Kustomization.kustomize.toolkit.fluxcd.io).
type Kinds struct {
	// Only compare these kinds; every kind when empty.
	Include []string `yaml:"include,omitempty" json:"include,omitempty" schema:"uniqueItems;itemPattern=^[A-Z][A-Za-z0-9]*(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$" aka:"includes,only"`
	// Never compare these kinds.
	Exclude []string `yaml:"exclude,omitempty" json:"exclude,omitempty" schema:"uniqueItems;itemPattern=^[A-Z][A-Za-z0-9]*(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$" aka:"excludes,skip"`
}

// AppliedRevision names the object that records which Git revision the
// GitOps tool applied. Comparing against the branch head instead would
// propose reverting every commit not yet applied.
type AppliedRevision struct {
	// A Flux Kustomization; its status.lastAppliedRevision is used.
	Flux *kube.ObjectRef `yaml:"flux,omitempty" json:"flux,omitempty" aka:"fluxKustomization,kustomization"`
	// An Argo CD Application; the revision of its newest status.history
	// entry, or status.sync.revision while status.sync.status is Synced.
	ArgoCD *kube.ObjectRef `yaml:"argocd,omitempty" json:"argocd,omitempty" aka:"argoCD,argo,argoCd,application"`
	// A Flux HelmRelease, for a root that is its file: the Git revision of
	// the HelmChart its status.helmChart names
	// (status.observedSourceArtifactRevision); the target waits until the
	// newest release's status.history configDigest is that of Git's values.
	HelmRelease *kube.ObjectRef `yaml:"helmRelease,omitempty" json:"helmRelease,omitempty" aka:"fluxHelmRelease,hr,release"`
	// Compare against the head of the base branch, accepting that commits the
	// GitOps tool has not applied yet look like drift. Must be true if set.
	Head bool `yaml:"head,omitempty" json:"head,omitempty" schema:"const=true" aka:"HEAD,branchHead"`
}
