package bot

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/bot/app"
	"github.com/driftback/driftback/bot/archive"
	"github.com/driftback/driftback/bot/commit"
	"github.com/driftback/driftback/bot/ghround"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/bot/idle"
	"github.com/driftback/driftback/bot/keyed"
	"github.com/driftback/driftback/bot/metrics"
	"github.com/driftback/driftback/bot/pollstate"
	"github.com/driftback/driftback/bot/pullrequest"
	"github.com/driftback/driftback/bot/stall"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
)

// Target is one target with what a reconcile needs beyond its config.
type Target struct {
	Config config.Target // resolved: defaults merged in
	Lister cluster.Lister
	// Applied reads the revision the GitOps tool applied; nil means the
	// target accepted rendering at the base head (appliedRevision.head).
	Applied func(ctx context.Context) (cluster.Applied, error)
	// ByInventory: a discovered target compares exactly the objects its
	// GitOps tool applied. Each poll reads them with the applied revision
	// (one read of the Kustomization or Application, through Applied), so
	// the object set always matches the revision the poll renders.
	ByInventory bool
	// SameRoot names the other targets on the same repository and root
	// (targetplan.SameRoot), which the plan's writes must leave alone.
	SameRoot []string
	// Audit, when set, is the cluster's audit trail: each edit names the
	// user behind its write. Refreshed at every poll.
	Audit *cluster.AuditTrail
	// CoAuthors maps cluster users to GitHub logins (audit.githubUsers):
	// the commit recording their change is co-authored by them.
	CoAuthors map[string]string
	// round is the GitHub reads this poll shares with the others of its
	// round (bot/ghround); nil outside a round.
	round *ghround.Round
}

// Bot reconciles targets against GitHub. Make one with New.
type Bot struct {
	GitHub   *github.Client
	Archives *archive.Archives
	Metrics  *metrics.Metrics
	Log      *slog.Logger
	// Fence, when set, is asked right before every GitHub write for a
	// target (each attempt, after any wait) whether this replica may still
	// write for it; an error stops the write and the poll, and the attempt
	// must end within left (zero: no bound). Leases.Writable is the fence
	// of replicas that share targets.
	Fence func(target string) (left time.Duration, err error)

	appID    int64
	login    string
	logins   commit.Logins             // GitHub login → its Co-authored-by trailer
	reads    ghround.Reader            // the base heads and pull requests read, kept across polls
	instance string                    // config instance: what this installation stamps on its writes
	memory   idle.Memory               // per target: what the last reconcile saw
	rerun    keyed.Map[string]         // per target: the commit whose check someone asked to run again
	blocked  keyed.Map[commit.Blocked] // per target: a branch move GitHub refused
	stalls   stall.Tracker             // per target: the cause of the polls failing in a row
	// archived: per target, its repository refused a write as archived
	// (read-only); polls only ask whether it still is.
	archived keyed.Map[bool]

	deployment string            // Options.Deployment
	now        func() time.Time  // the clock a write's age is read on (bot/app); nil: time.Now
	conflicts  keyed.Map[string] // per target: the other deployment last warned about
}

// Options are the parts of a Bot that have defaults.
type Options struct {
	// AppID is the GitHub App's id: the bot reads and writes only the
	// check runs its own App made. Required.
	AppID int64
	// Login is the App's bot account, "<slug>[bot]" (githubapi.AppLogin): only
	// commits it authored and committed are driftback's own. Required.
	Login string
	// Download fetches repository archives, which GitHub serves from
	// another host; it is never sent the installation token. nil: a client
	// on githubapi.NewTransport with a 5-minute overall timeout.
	Download *http.Client
	Metrics  *metrics.Metrics // nil: a registry of its own
	Log      *slog.Logger     // nil: logs are discarded
	// Instance names this installation (config instance); "" is
	// config.DefaultInstance. Everything the bot writes carries it, and it
	// never touches a pull request or branch another instance wrote.
	Instance string
	// Deployment names the deployment this process is a replica of (its
	// cluster and namespace; the same for every replica, and across
	// restarts); "" when it cannot tell. Everything the bot writes
	// carries it, and it stands back for a target another deployment at
	// its instance wrote within app.DeploymentHold.
	Deployment string
	// RenderBytes bounds the kustomize renders kept across polls (a
	// target's costs up to three: plain, dyed, verified). 0 keeps none.
	RenderBytes int64
}

// New returns a Bot that talks to GitHub through gh.
func New(gh *github.Client, opts Options) *Bot {
	if opts.Metrics == nil {
		opts.Metrics = metrics.NewMetrics()
	}
	if opts.Download == nil {
		opts.Download = &http.Client{Transport: githubapi.NewTransport(), Timeout: archive.DownloadTimeout}
	}
	s := &archive.Archives{GitHub: gh, Download: opts.Download}
	if opts.RenderBytes > 0 {
		s.Renders = analyzer.NewRenderCache(opts.RenderBytes)
	}
	if opts.Instance == "" {
		opts.Instance = config.DefaultInstance
	}
	return &Bot{GitHub: gh, Archives: s, Metrics: opts.Metrics, Log: opts.Log, appID: opts.AppID, login: opts.Login, instance: opts.Instance,
		deployment: opts.Deployment}
}

// Outcome says what one reconcile did, for logs and tests.
type Outcome = pollstate.Outcome

// application is the installation as this poll writes: built from the
// Bot's fields as they are now, which tests change.
func (b *Bot) application() *app.App {
	return &app.App{GitHub: b.GitHub, Metrics: b.Metrics, ID: b.appID, Login: b.login, Instance: b.instance, Deployment: b.deployment, Now: b.now}
}

// keeper keeps the poll's pull request, built from the Bot's fields as
// they are now.
func (b *Bot) keeper() *pullrequest.Keeper {
	return &pullrequest.Keeper{App: b.application(), Logins: &b.logins, Blocked: &b.blocked, Conflicts: &b.conflicts,
		Fresh: func(ctx context.Context, p *pollstate.Poll) ([]*github.PullRequest, error) {
			return b.reads.FreshPRs(ctx, b.GitHub, p)
		}}
}

// loader loads the poll's repository at a revision, its remote bases
// mounted, for the idle check (no pins kept).
func (b *Bot) loader(p *poll) idle.Loader {
	return func(ctx context.Context, rev string) (*analyzer.Snapshot, error) {
		return b.Archives.At(ctx, p.Owner, p.Repo, rev, p.BaseSHA, p.Target.Root, nil)
	}
}

func (b *Bot) log() *slog.Logger {
	if b.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return b.Log
}
