package bot

import (
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// BenchmarkScaleBot is BenchmarkScale's thousand targets with the bot in
// a process of its own (botProcess), as `run` builds it (the production
// cache budgets, its Go memory limit set from a 512Mi container limit,
// the cluster read through a kubeconfig at the config's default client
// rate), so CPU and memory are the bot's alone, not the in-process
// GitHub's and the test's. Settled first, as BenchmarkScale is.
// Sub-benchmarks, each op one round of every target: idle; drift=1%.
// Reported per op: wall time, the bot's CPU seconds, GitHub requests and
// writes; and the bot's peak resident memory (VmHWM, settling included).
func BenchmarkScaleBot(b *testing.B) {
	const targets = 1000
	w := newScaleWorld(b, targets, 10)
	p := startBotProcess(b, w.botConfig(b), w.h.clock)
	for i := 0; ; i++ {
		if p.ask("pending") == "0" && i > 0 {
			break
		}
		if i == 100 {
			b.Fatalf("%s targets never settled", p.ask("pending"))
		}
		w.h.clock.Advance(20 * time.Minute)
		p.poll()
	}
	w.h.clock.Advance(time.Minute)
	p.poll() // primes every conditional request
	// DRIFTBACK_SCALE_PROFILE=prefix writes the bot's CPU profile of each
	// sub-benchmark's rounds to prefix.<sub-benchmark>.
	profile := os.Getenv("DRIFTBACK_SCALE_PROFILE")
	measure := func(b *testing.B, before func()) {
		if profile != "" {
			p.ask("profile " + profile + "." + strings.NewReplacer("/", "_", "%", "pc").Replace(b.Name()))
			defer p.ask("profile")
		}
		gh, u := w.h.srv.Counters(), p.usage()
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			before()
			w.h.clock.Advance(time.Minute)
			b.StartTimer()
			p.round()
		}
		b.StopTimer()
		n := float64(b.N)
		d, after := w.h.srv.Counters().Sub(gh), p.usage()
		b.ReportMetric((after.CPU-u.CPU).Seconds()/n, "cpu-s/op")
		b.ReportMetric(float64(d.Requests)/n, "github-requests/op")
		b.ReportMetric(float64(d.Mutating)/n, "github-writes/op")
		b.ReportMetric(float64(after.PeakRSS)/(1<<20), "peak-rss-MiB")
		if after.PeakRSS > memoryBudget {
			b.Errorf("the bot's peak resident memory %d MiB is above the %d MiB budget", after.PeakRSS>>20, memoryBudget>>20)
		}
	}
	b.Run("idle", func(b *testing.B) { measure(b, func() {}) })
	drifted := 0
	b.Run("drift=1%", func(b *testing.B) {
		measure(b, func() {
			for range targets / 100 {
				w.drift(b, drifted%targets)
				drifted++
			}
		})
	})
	var fig memoryFigures
	if err := json.Unmarshal([]byte(p.ask("figures")), &fig); err != nil {
		b.Fatalf("the bot's figures: %v", err)
	}
	b.Logf("the bot: peak RSS %d MiB, peak heap %d MiB, peak live heap %d MiB, heap after GC %d MiB",
		fig.PeakRSS>>20, fig.PeakHeap>>20, fig.PeakLive>>20, fig.HeapAfterGC>>20)
	p.close()
}

// botConfig writes the config of a bot process for this world: the App's
// key, the in-process GitHub, the apiserver's kubeconfig and the targets.
func (w *scaleWorld) botConfig(b *testing.B) string {
	dir := b.TempDir()
	keyFile := filepath.Join(dir, "key.pem")
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key(b))})
	if err := os.WriteFile(keyFile, pemKey, 0o600); err != nil {
		b.Fatal(err)
	}
	text := fmt.Sprintf("github: {appID: %d, privateKeyFile: %s, installationID: %d, apiURL: %q}\nclusters: [{name: prod, kubeconfig: %s}]\ntargets:\n%s",
		appID, keyFile, instID, w.h.srv.URL()+"/", w.env.Kubeconfig, w.targets)
	cfgPath := filepath.Join(dir, "driftback.yaml")
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
	return cfgPath
}
