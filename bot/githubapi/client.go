package githubapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/bradleyfalzon/ghinstallation/v2"
	"github.com/golang-jwt/jwt/v4"
	"github.com/google/go-github/v62/github"
)

// AppAuth is how the bot proves it is the App.
type AppAuth struct {
	AppID          int64
	PrivateKey     []byte // PEM; never logged
	InstallationID int64
	BaseURL        string // API root with a trailing slash; "" is api.github.com
}

// ClientOptions tune the GitHub client; the zero value is production's.
type ClientOptions struct {
	// Base is the transport under everything (tests use the fake server's);
	// nil is NewTransport's, with connect and header timeouts.
	Base http.RoundTripper
	// RequestTimeout bounds one attempt of one request, reading the body
	// included; default 1m.
	RequestTimeout time.Duration
	// Now replaces time.Now for token expiry decisions.
	Now func() time.Time
	// MutationGap is the least time between two content-creating requests
	// of the installation, to stay inside GitHub's secondary limits (80 a
	// minute); default 1s. With WriteShare replicas, each waits that many
	// gaps.
	MutationGap time.Duration
	// MaxRetries for 5xx and rate limits; default 4.
	MaxRetries int
	// Sleep waits; tests replace it to run without real delays.
	Sleep func(ctx context.Context, d time.Duration) error
	// WriteShare is how many replicas of this installation share its
	// hourly write budget (bot/shard's Leases.Replicas); nil: one. GitHub
	// counts content writes per installation, not per process.
	WriteShare func() int
	// Limits are the installation's limits as this process knows them,
	// shared by every client made with them (the App's own requests
	// included); nil: new ones, the client's own.
	Limits  *Limits
	Metrics Metrics
	Log     *slog.Logger
}

// Metrics is where the transport counts what it does, under the names of
// the bot's metric table (driftback_github_*); the bot's registry is one.
type Metrics interface {
	Inc(name string, labels map[string]string)
	Set(name string, labels map[string]string, v float64)
}

// noMetrics counts nothing, for clients made without a registry.
type noMetrics struct{}

func (noMetrics) Inc(string, map[string]string)          {}
func (noMetrics) Set(string, map[string]string, float64) {}

// NewClient returns a go-github client authenticated as the installation,
// with conditional requests, retries with backoff, rate-limit handling and
// serialized mutations in its transport.
func NewClient(auth AppAuth, opts ClientOptions) (*github.Client, error) {
	apps, resilient, baseURL, opts, err := newAppClient(auth, opts)
	if err != nil {
		return nil, err
	}
	ts := &tokenSource{apps: apps, id: auth.InstallationID, now: opts.Now, metrics: opts.Metrics}
	tr := &etagTransport{base: &installationTransport{base: resilient, ts: ts}, metrics: opts.Metrics}
	c := github.NewClient(&http.Client{Transport: tr})
	c.BaseURL = baseURL
	c.UploadURL = baseURL
	return c, nil
}

// FindInstallation looks up the App's installation on an owner (an
// organization, else a user), for configs that name the owner only.
func FindInstallation(ctx context.Context, auth AppAuth, opts ClientOptions, owner string) (int64, error) {
	apps, _, _, _, err := newAppClient(auth, opts)
	if err != nil {
		return 0, err
	}
	// Listing the App's installations works for organizations and users
	// alike.
	opt := &github.ListOptions{PerPage: 100}
	for {
		ins, resp, err := apps.Apps.ListInstallations(ctx, opt)
		if err != nil {
			return 0, fmt.Errorf("list the App's installations: %w", err)
		}
		for _, in := range ins {
			if strings.EqualFold(in.GetAccount().GetLogin(), owner) {
				return in.GetID(), nil
			}
		}
		if resp.NextPage == 0 {
			return 0, fmt.Errorf("the App is not installed on %s", owner)
		}
		opt.Page = resp.NextPage
	}
}

// AppLogin asks GitHub for the App's bot account, "<slug>[bot]": the
// author of every commit the App makes (Options.Login).
func AppLogin(ctx context.Context, auth AppAuth, opts ClientOptions) (string, error) {
	apps, _, _, _, err := newAppClient(auth, opts)
	if err != nil {
		return "", err
	}
	a, _, err := apps.Apps.Get(ctx, "")
	if err != nil {
		return "", fmt.Errorf("read the App: %w", err)
	}
	if a.GetSlug() == "" {
		return "", errors.New("read the App: GitHub gave no slug")
	}
	return a.GetSlug() + "[bot]", nil
}

// newAppClient builds the client that speaks as the App itself (JWT).
func newAppClient(auth AppAuth, opts ClientOptions) (*github.Client, *resilientTransport, *url.URL, ClientOptions, error) {
	if opts.Base == nil {
		opts.Base = NewTransport()
	}
	if opts.RequestTimeout == 0 {
		opts.RequestTimeout = time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MutationGap == 0 {
		opts.MutationGap = time.Second
	}
	if opts.MaxRetries == 0 {
		opts.MaxRetries = 4
	}
	if opts.Sleep == nil {
		opts.Sleep = sleepCtx
	}
	if opts.Metrics == nil {
		opts.Metrics = noMetrics{}
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	base := strings.TrimSuffix(auth.BaseURL, "/")
	if base == "" {
		base = "https://api.github.com"
	}
	baseURL, err := url.Parse(base + "/")
	if err != nil {
		return nil, nil, nil, opts, fmt.Errorf("github api url: %w", err)
	}
	if opts.Limits == nil {
		opts.Limits = &Limits{}
	}
	resilient := &resilientTransport{base: opts.Base, opts: opts, Limits: opts.Limits}
	key, err := jwt.ParseRSAPrivateKeyFromPEM(auth.PrivateKey)
	if err != nil {
		return nil, nil, nil, opts, errors.New("github app private key: not an RSA private key in PEM form") // never the key itself
	}
	appTr, err := ghinstallation.NewAppsTransportWithOptions(resilient, auth.AppID,
		ghinstallation.WithSigner(&clockSigner{key: key, now: resilient.githubNow}))
	if err != nil {
		return nil, nil, nil, opts, fmt.Errorf("github app transport: %w", err)
	}
	appTr.BaseURL = base
	apps := github.NewClient(&http.Client{Transport: &skewRetry{base: appTr, clock: resilient}})
	apps.BaseURL = baseURL
	return apps, resilient, baseURL, opts, nil
}

// NewTransport is the HTTP transport for GitHub's API and archive hosts:
// connecting, the TLS handshake and waiting for headers are bounded, so a
// hung connection fails instead of stalling every target.
func NewTransport() *http.Transport {
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          20,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}
