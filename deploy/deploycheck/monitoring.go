package deploycheck

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"
)

// The alerts the PrometheusRule must carry, whatever else it holds.
var RequiredAlerts = []string{
	"DriftbackNoSuccessfulPoll",   // no target polled successfully for a while
	"DriftbackGitHubRateLimitLow", // the installation's API budget runs out
	"DriftbackGitHubRateLimited",  // GitHub answered with a rate limit
	"DriftbackRefusalsRising",     // plans refuse more edits than before
	"DriftbackPollErrors",         // polls fail
	"DriftbackLeaseWritesRefused", // a replica cannot write its Lease: it holds no target
}

// DashboardLabel marks a ConfigMap that Grafana's dashboard sidecar loads.
const DashboardLabel = "grafana_dashboard"

// Typed views, strict: a misspelt field is an error, as for built-in kinds
// (Prometheus Operator CRDs are not in client-go's scheme).
type objectMeta struct {
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type serviceMonitor struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   objectMeta `json:"metadata"`
	Spec       struct {
		JobLabel string `json:"jobLabel,omitempty"`
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		NamespaceSelector *struct {
			MatchNames []string `json:"matchNames"`
			Any        bool     `json:"any,omitempty"`
		} `json:"namespaceSelector,omitempty"`
		Endpoints []struct {
			Port          string `json:"port"`
			Path          string `json:"path"`
			Scheme        string `json:"scheme,omitempty"`
			Interval      string `json:"interval,omitempty"`
			ScrapeTimeout string `json:"scrapeTimeout,omitempty"`
			HonorLabels   bool   `json:"honorLabels,omitempty"`
		} `json:"endpoints"`
	} `json:"spec"`
}

type alertRule struct {
	Alert       string            `json:"alert,omitempty"`
	Record      string            `json:"record,omitempty"`
	Expr        string            `json:"expr"`
	For         string            `json:"for,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type prometheusRule struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   objectMeta `json:"metadata"`
	Spec       struct {
		Groups []struct {
			Name     string      `json:"name"`
			Interval string      `json:"interval,omitempty"`
			Rules    []alertRule `json:"rules"`
		} `json:"groups"`
	} `json:"spec"`
}

var monitoringKinds = map[string]func() any{
	"ServiceMonitor": func() any { return &serviceMonitor{} },
	"PrometheusRule": func() any { return &prometheusRule{} },
}

func strictDecode(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	return dec.Decode(v)
}

var metricRE = regexp.MustCompile(`\bdriftback_[a-z0-9_]+\b`)

// dashboardExprs returns every PromQL expression of a Grafana dashboard
// (panels and their rows, and templating queries).
func dashboardExprs(b []byte) ([]string, error) {
	var d struct {
		Title      string          `json:"title"`
		UID        string          `json:"uid"`
		Panels     []dashboardItem `json:"panels"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, err
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		return nil, fmt.Errorf("a dashboard needs a title, a uid and panels")
	}
	var exprs []string
	var walk func([]dashboardItem)
	walk = func(ps []dashboardItem) {
		for _, p := range ps {
			for _, t := range p.Targets {
				exprs = append(exprs, t.Expr)
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		switch q := v.Query.(type) {
		case string:
			exprs = append(exprs, q)
		case map[string]any:
			if s, ok := q["query"].(string); ok {
				exprs = append(exprs, s)
			}
		}
	}
	return exprs, nil
}

type dashboardItem struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashboardItem `json:"panels"`
}

// MetricNames returns the driftback metric names that the PrometheusRules
// and dashboard ConfigMaps among objs query, sorted, each with where it is
// used.
func MetricNames(objs []*Object) (map[string][]string, error) {
	names := map[string][]string{}
	add := func(where, expr string) {
		for _, n := range metricRE.FindAllString(expr, -1) {
			if !slices.Contains(names[n], where) {
				names[n] = append(names[n], where)
			}
		}
	}
	for _, o := range objs {
		switch {
		case o.Kind == "PrometheusRule":
			var r prometheusRule
			if err := strictDecode(o.json, &r); err != nil {
				return nil, fmt.Errorf("%s: %v", o, err)
			}
			for _, g := range r.Spec.Groups {
				for _, rule := range g.Rules {
					add(fmt.Sprintf("%s alert %s", o, rule.Alert+rule.Record), rule.Expr)
				}
			}
		case o.Kind == "ConfigMap" && o.Labels[DashboardLabel] != "":
			var cm struct {
				Data map[string]string `json:"data"`
			}
			if err := o.decode(&cm); err != nil {
				return nil, err
			}
			for k, v := range cm.Data {
				exprs, err := dashboardExprs([]byte(v))
				if err != nil {
					return nil, fmt.Errorf("%s: %s: %v", o, k, err)
				}
				for _, e := range exprs {
					add(fmt.Sprintf("%s dashboard %s", o, k), e)
				}
			}
		}
	}
	for _, ws := range names {
		sort.Strings(ws)
	}
	return names, nil
}

// checkMonitoring: a ServiceMonitor scrapes the Service's http port at
// /metrics; a PrometheusRule has the alerts that matter, each with a
// severity, a summary, a valid `for` and an expression over driftback's
// metrics; a dashboard ConfigMap holds dashboards whose queries use
// driftback's metrics. The objects are optional; what is there must be
// right.
func (e Expect) checkMonitoring(objs []*Object) []string {
	var ps []string
	for _, o := range find(objs, "ServiceMonitor") {
		ps = append(ps, checkServiceMonitor(o, objs)...)
	}
	for _, o := range find(objs, "PrometheusRule") {
		ps = append(ps, checkPrometheusRule(o)...)
	}
	for _, o := range objs {
		if o.Kind != "ConfigMap" || o.Labels[DashboardLabel] == "" {
			continue
		}
		ps = append(ps, checkDashboards(o)...)
	}
	return ps
}

// checkServiceMonitor: o selects a Service of the installation and scrapes
// its http port at /metrics.
func checkServiceMonitor(o *Object, objs []*Object) []string {
	var sm serviceMonitor
	if err := strictDecode(o.json, &sm); err != nil {
		return []string{fmt.Sprintf("%s: %v", o, err)}
	}
	var ps []string
	sel := sm.Spec.Selector.MatchLabels
	matched := false
	for _, s := range find(objs, "Service") {
		if len(sel) > 0 && selects(sel, s.Labels) {
			matched = true
		}
	}
	if !matched {
		ps = append(ps, fmt.Sprintf("%s: selector %v matches no Service of the installation", o, sel))
	}
	if len(sm.Spec.Endpoints) == 0 {
		ps = append(ps, fmt.Sprintf("%s: has no endpoints", o))
	}
	for i, ep := range sm.Spec.Endpoints {
		if ep.Port != "http" || ep.Path != "/metrics" {
			ps = append(ps, fmt.Sprintf("%s: endpoint %d scrapes port %q path %q, want http /metrics", o, i, ep.Port, ep.Path))
		}
	}
	return ps
}

// checkPrometheusRule: every alert of o is well formed, and o has all of
// RequiredAlerts.
func checkPrometheusRule(o *Object) []string {
	var r prometheusRule
	if err := strictDecode(o.json, &r); err != nil {
		return []string{fmt.Sprintf("%s: %v", o, err)}
	}
	var ps []string
	var alerts []string
	for _, g := range r.Spec.Groups {
		for _, rule := range g.Rules {
			if rule.Alert == "" {
				continue
			}
			alerts = append(alerts, rule.Alert)
			ps = append(ps, checkAlert(fmt.Sprintf("%s: group %s alert %s", o, g.Name, rule.Alert), rule)...)
		}
	}
	for _, want := range RequiredAlerts {
		if !slices.Contains(alerts, want) {
			ps = append(ps, fmt.Sprintf("%s: has no alert %s", o, want))
		}
	}
	return ps
}

// checkAlert: an alerting rule (named at) queries driftback's metrics with
// balanced parentheses, has a valid `for`, a known severity, a summary and a
// description.
func checkAlert(at string, rule alertRule) []string {
	var ps []string
	if !metricRE.MatchString(rule.Expr) {
		ps = append(ps, fmt.Sprintf("%s: expr %q queries no driftback metric", at, rule.Expr))
	}
	if strings.Count(rule.Expr, "(") != strings.Count(rule.Expr, ")") {
		ps = append(ps, fmt.Sprintf("%s: expr %q has unbalanced parentheses", at, rule.Expr))
	}
	if _, err := time.ParseDuration(rule.For); rule.For != "" && err != nil {
		ps = append(ps, fmt.Sprintf("%s: for %q: %v", at, rule.For, err))
	}
	if s := rule.Labels["severity"]; s != "critical" && s != "warning" && s != "info" {
		ps = append(ps, fmt.Sprintf("%s: severity %q, want critical, warning or info", at, s))
	}
	if rule.Annotations["summary"] == "" || rule.Annotations["description"] == "" {
		ps = append(ps, fmt.Sprintf("%s: needs a summary and a description", at))
	}
	return ps
}

// checkDashboards: the dashboard ConfigMap o holds at least one dashboard,
// and every query of each uses a driftback metric.
func checkDashboards(o *Object) []string {
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := o.decode(&cm); err != nil {
		return []string{fmt.Sprintf("%s: %v", o, err)}
	}
	var ps []string
	if len(cm.Data) == 0 {
		ps = append(ps, fmt.Sprintf("%s: holds no dashboard", o))
	}
	for k, v := range cm.Data {
		exprs, err := dashboardExprs([]byte(v))
		if err != nil {
			ps = append(ps, fmt.Sprintf("%s: %s: %v", o, k, err))
			continue
		}
		for _, ex := range exprs {
			if !metricRE.MatchString(ex) {
				ps = append(ps, fmt.Sprintf("%s: %s: query %q uses no driftback metric", o, k, ex))
			}
		}
	}
	return ps
}

func selects(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}
