package commands

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/google/go-github/v62/github"

	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/config"
)

// keptGitHub carries the GitHub side of the bot from one generation to
// the next (DESIGN §12, "Reloads"): while the App's identity (API URL,
// App, installation, key) stays, the client, with its token, ETags,
// Retry-After hold and hour of writes, and the App's login; while the
// instance stays too, the Bot built on them, with its idle memos, reads
// and Re-run requests. Each installation's limits (githubapi.Limits) are
// kept for the whole process, so a new client (a rotated key) still
// keeps the hour's writes and a hold GitHub asked for; with shared, so
// do the processes after this one.
type keptGitHub struct {
	mu       sync.Mutex
	identity string // what gh was built for; "" before the first
	gh       *github.Client
	login    string
	bot      *bot.Bot
	botOf    bot.Options // what bot was built with
	limits   map[string]*githubapi.Limits
	shared   *sharedLimits // nil: the limits are this process's alone
}

// client returns the installation's client and the App's login: the
// ones kept when the identity did not change, else new ones, on the
// installation's kept limits.
func (k *keptGitHub) client(ctx context.Context, g config.GitHub, auth githubapi.AppAuth, opts githubapi.ClientOptions, log *slog.Logger) (*github.Client, string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	id := identityOf(auth, g.Owner)
	if k.gh != nil && k.identity == id {
		return k.gh, k.login, nil
	}
	// GitHub counts the writes and asks for pauses per installation.
	install := fmt.Sprintf("%s %d %d %s", strings.TrimSuffix(auth.BaseURL, "/"), auth.AppID, auth.InstallationID, strings.ToLower(g.Owner))
	if k.limits[install] == nil {
		if k.limits == nil {
			k.limits = map[string]*githubapi.Limits{}
		}
		k.limits[install] = &githubapi.Limits{}
		// Before the installation's first request: a hold an earlier
		// process was told of holds it too.
		now := opts.Now
		if now == nil {
			now = time.Now
		}
		k.shared.keep(install, k.limits[install], now)
	}
	opts.Limits = k.limits[install]
	var err error
	if auth.InstallationID == 0 {
		if auth.InstallationID, err = githubapi.FindInstallation(ctx, auth, opts, g.Owner); err != nil {
			return nil, "", err
		}
	}
	gh, err := githubapi.NewClient(auth, opts)
	if err != nil {
		return nil, "", err
	}
	login, err := githubapi.AppLogin(ctx, auth, opts)
	if err != nil {
		return nil, "", err
	}
	if k.gh != nil {
		log.Info("the GitHub App's settings changed (API URL, App, installation or key): a new GitHub client; the installation's hour of writes and any pause GitHub asked for are kept when it is the same installation",
			"appID", auth.AppID, "installationID", auth.InstallationID, "apiURL", auth.BaseURL)
	}
	k.identity, k.gh, k.login = id, gh, login
	return gh, login, nil
}

// identityOf tells two App settings apart: the key by its hash, never
// kept itself.
func identityOf(auth githubapi.AppAuth, owner string) string {
	return fmt.Sprintf("%s %d %d %s %x", auth.BaseURL, auth.AppID, auth.InstallationID, strings.ToLower(owner), sha256.Sum256(auth.PrivateKey))
}

// botFor returns the Bot kept for gh when it was built with the same
// options, else a new one (kept from now on). A nil k keeps nothing.
func (k *keptGitHub) botFor(gh *github.Client, opts bot.Options) *bot.Bot {
	if k == nil {
		return bot.New(gh, opts)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.bot != nil && k.bot.GitHub == gh && opts == k.botOf {
		return k.bot
	}
	k.bot, k.botOf = bot.New(gh, opts), opts
	return k.bot
}
