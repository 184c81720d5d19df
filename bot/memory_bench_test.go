package bot

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/synth"
)

// memoryBudget is issue 17's target for the bot's resident memory.
const memoryBudget = 512 << 20

// BenchmarkMemory is issue 17's memory target: 500 targets on one
// repository that holds a 50 MB file, polled through 50 commits (each
// touching one root's kustomization), with the production cache budgets.
// The repository is the synthetic one (500 roots of 10 objects, 1% of the
// objects drifted, so some targets open pull requests). The bot runs in a
// process of its own (this test binary again, see botProcess) against
// the GitHub test server in this one, so its figures are the bot's alone:
// peak resident memory (VmHWM), peak heap in use (sampled every 25 ms) and
// the heap left after a GC at the end. Both processes keep one virtual
// clock: the bot's waits (its mutation spacing and hourly budget,
// GitHub's secondary limits) are asked of this process, which moves the
// server's clock instead of sleeping. The bot runs as deploy/ sets it up
// for a pod limited to 512Mi: told the container's limit, it sets its Go
// memory limit to memlimit.GoMemoryLimit of it, as `run` does (GOMEMLIMIT in this
// process's environment replaces that; "off" runs without). One op is
// the whole run; it fails when the bot's peak resident memory is above
// 512 MiB.
func BenchmarkMemory(b *testing.B) {
	const targets, objects = 500, 10
	commits := 50
	if n, err := strconv.Atoi(os.Getenv("DRIFTBACK_MEMORY_COMMITS")); err == nil && n > 0 {
		commits = n // a shorter run, to look into the figures
	}
	fx, err := synth.NewRepo(1, targets, objects)
	if err != nil {
		b.Fatal(err)
	}
	lives, _, err := fx.Live(0.01)
	if err != nil {
		b.Fatal(err)
	}
	files := map[string][]byte{}
	for _, p := range fx.Repo.Paths() {
		files[p], _ = fx.Repo.File(p)
	}
	// One 50 MB file no root reads (a data dump, say). Text, so the
	// tarball compresses it as a real one would be.
	var dump bytes.Buffer
	for i := 0; dump.Len() < 50<<20; i++ {
		fmt.Fprintf(&dump, "%08d the quick brown fox jumps over the lazy dog\n", i)
	}
	files["data/dump.txt"] = dump.Bytes()

	dir := b.TempDir()
	keyFile := filepath.Join(dir, "key.pem")
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key(b))})
	if err := os.WriteFile(keyFile, pemKey, 0o600); err != nil {
		b.Fatal(err)
	}
	var cfgText strings.Builder
	targetLines := func(apiURL string) string {
		cfgText.Reset()
		fmt.Fprintf(&cfgText, "github: {appID: %d, privateKeyFile: %s, installationID: %d, apiURL: %q}\nclusters: [{name: prod, inCluster: true}]\ntargets:\n",
			appID, keyFile, instID, apiURL)
		for i, root := range fx.Roots {
			var list struct {
				Items []struct {
					Metadata struct{ Namespace string } `json:"metadata"`
				} `json:"items"`
			}
			if err := json.Unmarshal(lives[root], &list); err != nil || len(list.Items) == 0 {
				b.Fatalf("live objects of %s: %v", root, err)
			}
			name := fmt.Sprintf("t%03d", i)
			if err := os.WriteFile(filepath.Join(dir, name+".json"), lives[root], 0o644); err != nil {
				b.Fatal(err)
			}
			fmt.Fprintf(&cfgText, "- {name: %s, repo: acme/fleet, baseBranch: main, root: %s, cluster: prod, namespaces: [%s], appliedRevision: {head: true}}\n",
				name, root, list.Items[0].Metadata.Namespace)
		}
		return cfgText.String()
	}

	for b.Loop() {
		b.StopTimer()
		clock := githubtest.NewClock(time.Now())
		srv := githubtest.New(githubtest.Options{T: b, Clock: clock.Now, RateLimit: 1 << 30})
		srv.RegisterApp(appID, &key(b).PublicKey)
		srv.SetAppSlug(appID, "driftback")
		srv.SetAppPermissions(appID, manifestPermissions(b))
		srv.AddInstallation(appID, instID, owner)
		srv.CreateRepo(owner, "fleet", "main", files)
		cfgPath := filepath.Join(dir, "driftback.yaml")
		if err := os.WriteFile(cfgPath, []byte(targetLines(srv.URL()+"/")), 0o644); err != nil {
			b.Fatal(err)
		}
		p := startBotProcess(b, cfgPath, clock)
		ask := p.ask
		b.StartTimer()
		for c := range commits {
			if got := ask("poll"); got != "ok" {
				b.Fatalf("commit %d: %s", c, got)
			}
			kust := fmt.Sprintf("teams/t%03d/overlay/kustomization.yaml", c*7%targets)
			data := append(append([]byte{}, files[kust]...), fmt.Sprintf("# commit %d\n", c)...)
			srv.Commit(owner, "fleet", "main", "someone", map[string][]byte{kust: data})
		}
		b.StopTimer()
		var fig memoryFigures
		if err := json.Unmarshal([]byte(ask("figures")), &fig); err != nil {
			b.Fatalf("the bot's figures: %v", err)
		}
		p.close()
		prs := 0
		for _, pr := range srv.PullRequests(owner, "fleet") {
			if pr.State == "open" {
				prs++
			}
		}
		srv.Close()
		b.ReportMetric(float64(fig.PeakRSS)/(1<<20), "peak-rss-MiB")
		b.ReportMetric(float64(fig.PeakHeap)/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(fig.PeakLive)/(1<<20), "peak-live-heap-MiB")
		b.ReportMetric(float64(fig.HeapAfterGC)/(1<<20), "heap-after-gc-MiB")
		b.ReportMetric(float64(prs), "open-prs")
		if prs == 0 {
			b.Fatal("no target opened a pull request; the run planned nothing")
		}
		b.Logf("%d commits: peak RSS %d MiB, peak heap %d MiB, peak live heap %d MiB, heap after GC %d MiB, %d open PRs",
			commits, fig.PeakRSS>>20, fig.PeakHeap>>20, fig.PeakLive>>20, fig.HeapAfterGC>>20, prs)
		if fig.PeakRSS > memoryBudget {
			b.Fatalf("the bot's peak resident memory %d MiB is above the %d MiB budget", fig.PeakRSS>>20, memoryBudget>>20)
		}
		b.StartTimer() // b.Loop wants it running
	}
}

// peakHeap samples the heap in use until end, and the live heap (what the
// last GC kept): with a profile path, it writes the heap profile each time
// the live heap reaches a new high (by 4 MiB), so the profile left is the
// one at the peak, where the end would show only what the caches keep.
type peakHeap struct {
	stop, done chan struct{}
	max, live  uint64
}

func startPeakHeap(profile string) *peakHeap {
	p := &peakHeap{stop: make(chan struct{}), done: make(chan struct{})}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
	go func() {
		defer close(p.done)
		t := time.NewTicker(25 * time.Millisecond)
		defer t.Stop()
		profiled := uint64(0)
		for {
			metrics.Read(sample)
			p.max = max(p.max, sample[0].Value.Uint64())
			p.live = max(p.live, sample[1].Value.Uint64())
			if profile != "" && p.live >= profiled+4<<20 {
				profiled = p.live
				if f, err := os.Create(profile); err == nil {
					pprof.Lookup("heap").WriteTo(f, 0)
					f.Close()
				}
			}
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

// end stops the sampling and returns the peaks of the heap in use and of
// the live heap.
func (p *peakHeap) end() (inUse, live uint64) {
	close(p.stop)
	<-p.done
	return p.max, p.live
}
