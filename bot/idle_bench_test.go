package bot

import (
	"testing"
)

// BenchmarkIdlePoll: with nothing changed, a poll costs no kustomize build
// and no rate-limited GitHub request (every request is a 304).
func BenchmarkIdlePoll(b *testing.B) {
	h := newHarness(b, writeThroughOnly(b))
	h.poll()
	h.poll() // primes every conditional request
	_, builds := h.bot.Archives.Renders.Stats()
	before := h.srv.Counters()
	b.ResetTimer()
	for b.Loop() {
		if out := h.poll(); !out.Idle {
			b.Fatalf("not idle: %+v", out)
		}
	}
	b.StopTimer()
	d := h.srv.Counters().Sub(before)
	_, after := h.bot.Archives.Renders.Stats()
	n := float64(b.N)
	b.ReportMetric(float64(after-builds)/n, "builds/op")
	b.ReportMetric(float64(d.Requests-d.NotModified)/n, "rate-limited-requests/op")
	b.ReportMetric(float64(d.Requests)/n, "requests/op")
	if after != builds || d.Requests != d.NotModified {
		b.Fatalf("an idle poll built %d times and made %d rate-limited requests", after-builds, d.Requests-d.NotModified)
	}
}
