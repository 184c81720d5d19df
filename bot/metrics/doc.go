// Package metrics owns driftback's Prometheus registry and the one table of
// its metrics (metricDefs: name, type, labels, help), which alert rules in
// deploy/ are written against. Call sites name a metric and its labels.
//
// It imports no other package of bot/.
package metrics
