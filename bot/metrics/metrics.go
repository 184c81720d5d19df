package metrics

import (
	"net/http"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
)

// Metrics is driftback's Prometheus registry. Call sites name a metric and
// its labels (Inc, Add, Set, Observe); the names, help texts, label names
// and types live in one table, metricDefs, since alert rules are written
// against them.
type Metrics struct {
	// Now is the clock durations and timestamps are read from; nil is
	// time.Now. Tests set it.
	Now func() time.Time

	reg  *prometheus.Registry
	vecs map[string]prometheus.Collector // by name; fixed once NewMetrics returns
}

type metricKind int

const (
	counter metricKind = iota
	gauge
	histogram
)

type metricDef struct {
	kind   metricKind
	labels []string
	help   string
}

// durationBuckets span a poll that found nothing moved (tens of
// milliseconds) to a large render (minutes).
var durationBuckets = prometheus.ExponentialBuckets(0.05, 2, 13)

// metricDefs is every metric driftback exports. The names are an interface:
// deploy/ and users' alert rules refer to them.
var metricDefs = map[string]metricDef{
	"driftback_polls_total":        {counter, []string{"target"}, "Reconciles of a target started."},
	"driftback_poll_errors_total":  {counter, []string{"target"}, "Reconciles of a target that failed; the next poll retries."},
	"driftback_unread_polls_total": {counter, []string{"target"}, "Polls of a target that could not read everything its root renders from the cluster: no verdict, nothing closed."},
	"driftback_refusals_total":     {counter, []string{"target", "code"}, "Refusals in plans, counted once per plan, by refusal code."},
	"driftback_edits_total":        {counter, []string{"target"}, "Edits in plans, counted once per plan."},
	"driftback_commits_total":      {counter, []string{"target"}, "Commits pushed to a target's pull-request branch."},
	"driftback_github_requests_total": {counter, []string{"method"},
		"Requests sent to the GitHub API, by HTTP method."},
	"driftback_github_not_modified_total": {counter, nil,
		"GitHub API answers 304 Not Modified to a conditional request (they cost no rate limit)."},
	"driftback_github_rate_limited_total": {counter, []string{"kind"},
		"Times driftback waited for GitHub's rate limit: primary, secondary, or its own hourly budget."},
	"driftback_github_rate_limit_remaining": {gauge, nil,
		"Requests left in GitHub's primary rate-limit window, as its last answer said."},
	"driftback_github_token_refreshes_total": {counter, nil, "Installation tokens fetched."},
	"driftback_poll_duration_seconds":        {histogram, []string{"target"}, "How long one reconcile of a target took, failed ones included."},
	"driftback_plan_duration_seconds":        {histogram, []string{"target"}, "How long planning a target took: applied revision, snapshots, render and analysis."},
	"driftback_pull_request_open":            {gauge, []string{"target"}, "1 while the target has an open driftback pull request, else 0."},
	"driftback_refusals":                     {gauge, []string{"target", "code"}, "Refusals in the target's latest plan, by refusal code."},
	"driftback_render_fidelity_fields": {gauge, []string{"target"},
		"Fields in the target's latest plan whose live value only the GitOps tool wrote, and differently from driftback's render (never proposed; 0 when the render is what the tool applied), or -1 when the live objects carried no managedFields to tell."},
	"driftback_target_overlap": {gauge, []string{"target"},
		"1 while someone else (a person, another App, another driftback installation or deployment) holds the target's pull request or branch, which this one then leaves alone; else 0."},
	"driftback_deployment_conflict": {gauge, []string{"target"},
		"1 while another deployment of this App at this instance (driftback installed twice, both at one instance name) wrote the target's pull request or branch lately, so this one stands back for it: set instance in one of the two configs; else 0."},
	"driftback_discovered_targets": {gauge, []string{"cluster", "tool"},
		"Targets made from the cluster's Flux Kustomizations or Argo CD Applications at the last discovery."},
	"driftback_lease_writes_refused_total": {counter, nil,
		"Writes of this replica's membership Lease the apiserver refused (invalid, too large, forbidden): the replica holds no target, and /readyz fails, until one is accepted."},
	"driftback_webhook_deliveries_total": {counter, []string{"event", "outcome"},
		"GitHub webhook deliveries by event (check_run, check_suite, pull_request, push, installation, installation_repositories, repository, ping, other) and outcome: woke (targets to poll now), ignored, forged (a missing, malformed or wrong signature), replayed (the same signed payload handled within 10 minutes), oversized, busy (the bodies being read at their bound: 503), malformed, failed (a read the delivery needs failed: 503). Refused ones change nothing."},
	"driftback_last_successful_poll_timestamp_seconds": {gauge, []string{"target"},
		"Unix time of the target's last reconcile that succeeded."},
}

// NewMetrics returns a registry with driftback's metrics and the Go runtime
// and process collectors.
func NewMetrics() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry(), vecs: map[string]prometheus.Collector{}}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	names := make([]string, 0, len(metricDefs))
	for name := range metricDefs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		d := metricDefs[name]
		var c prometheus.Collector
		switch d.kind {
		case counter:
			c = prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: d.help}, d.labels)
		case gauge:
			c = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: d.help}, d.labels)
		case histogram:
			c = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: d.help, Buckets: durationBuckets}, d.labels)
		}
		m.reg.MustRegister(c)
		m.vecs[name] = c
	}
	return m
}

// Inc adds one to a counter.
func (m *Metrics) Inc(name string, labels map[string]string) { m.Add(name, labels, 1) }

// Add adds v to a counter. A name missing from metricDefs, or labels that
// do not match its label names, are dropped: a metric never stops a poll
// (a test checks every call site's name is in the table).
func (m *Metrics) Add(name string, labels map[string]string, v float64) {
	if vec, ok := m.vec(name).(*prometheus.CounterVec); ok {
		if c, err := vec.GetMetricWith(labels); err == nil {
			c.Add(v)
		}
	}
}

// Set sets a gauge.
func (m *Metrics) Set(name string, labels map[string]string, v float64) {
	if vec, ok := m.vec(name).(*prometheus.GaugeVec); ok {
		if g, err := vec.GetMetricWith(labels); err == nil {
			g.Set(v)
		}
	}
}

// Observe records one value in a histogram.
func (m *Metrics) Observe(name string, labels map[string]string, v float64) {
	if vec, ok := m.vec(name).(*prometheus.HistogramVec); ok {
		if h, err := vec.GetMetricWith(labels); err == nil {
			h.Observe(v)
		}
	}
}

// Time starts timing on the Metrics clock; the function it returns
// observes the seconds elapsed: defer m.Time(name, labels)().
func (m *Metrics) Time(name string, labels map[string]string) func() {
	if m == nil {
		return func() {}
	}
	start := m.Clock()
	return func() { m.Observe(name, labels, m.Clock().Sub(start).Seconds()) }
}

// Reset removes every series of a metric whose labels include these (a
// gauge per refusal code is reset before a new plan sets its codes).
func (m *Metrics) Reset(name string, labels map[string]string) {
	if vec, ok := m.vec(name).(interface {
		DeletePartialMatch(prometheus.Labels) int
	}); ok {
		vec.DeletePartialMatch(labels)
	}
}

// Get reads a counter or gauge series, or a histogram's count of
// observations; 0 when the series does not exist (tests use it).
func (m *Metrics) Get(name string, labels map[string]string) float64 {
	if m == nil {
		return 0
	}
	families, err := m.reg.Gather()
	if err != nil {
		return 0
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			if !sameLabels(s.GetLabel(), labels) {
				continue
			}
			switch {
			case s.Counter != nil:
				return s.Counter.GetValue()
			case s.Gauge != nil:
				return s.Gauge.GetValue()
			case s.Histogram != nil:
				return float64(s.Histogram.GetSampleCount())
			}
		}
	}
	return 0
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

func (m *Metrics) vec(name string) prometheus.Collector {
	if m == nil {
		return nil
	}
	return m.vecs[name]
}

// Clock is the time now as the registry reads it (Now, else time.Now): the
// bot reads its clock here so a test that sets Now moves both.
func (m *Metrics) Clock() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func sameLabels(got []*dto.LabelPair, want map[string]string) bool {
	if len(got) != len(want) {
		return false
	}
	for _, l := range got {
		if v, ok := want[l.GetName()]; !ok || v != l.GetValue() {
			return false
		}
	}
	return true
}
