package bot

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
)

// Metrics is a small Prometheus-compatible registry: counters and gauges
// with labels, exposed in the text format on /metrics.
type Metrics struct {
	mu     sync.Mutex
	values map[string]float64
	kinds  map[string]string // metric name -> counter|gauge
}

// NewMetrics returns an empty registry.
func NewMetrics() *Metrics {
	return &Metrics{values: map[string]float64{}, kinds: map[string]string{}}
}

func seriesKey(name string, labels map[string]string) string {
	if len(labels) == 0 {
		return name
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, labels[k])
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

// Inc adds one to a counter.
func (m *Metrics) Inc(name string, labels map[string]string) { m.Add(name, labels, 1) }

// Add adds v to a counter.
func (m *Metrics) Add(name string, labels map[string]string, v float64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.values[seriesKey(name, labels)] += v
	m.kinds[name] = "counter"
	m.mu.Unlock()
}

// Set sets a gauge.
func (m *Metrics) Set(name string, labels map[string]string, v float64) {
	if m == nil {
		return
	}
	m.mu.Lock()
	m.values[seriesKey(name, labels)] = v
	m.kinds[name] = "gauge"
	m.mu.Unlock()
}

// Get reads a series (tests and /readyz use it).
func (m *Metrics) Get(name string, labels map[string]string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.values[seriesKey(name, labels)]
}

// WriteTo writes the text exposition format.
func (m *Metrics) WriteTo(w io.Writer) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := make([]string, 0, len(m.values))
	for k := range m.values {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	typed := map[string]bool{}
	for _, k := range keys {
		name := k
		if i := strings.IndexByte(k, '{'); i >= 0 {
			name = k[:i]
		}
		if !typed[name] {
			typed[name] = true
			fmt.Fprintf(&b, "# TYPE %s %s\n", name, m.kinds[name])
		}
		fmt.Fprintf(&b, "%s %g\n", k, m.values[k])
	}
	n, err := io.WriteString(w, b.String())
	return int64(n), err
}
