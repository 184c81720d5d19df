package bench

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/kube"
	"github.com/driftback/driftback/internal/synth"
)

const (
	seed           = 20260801
	objectsPerRoot = 10
	memoryLimit    = 1 << 30 // 500 roots / 5,000 objects must plan in this
)

var sizes = []int{10, 100, 500}

// suite is one generated repository with its live snapshots by drift.
type suite struct {
	fx   *synth.Fixture
	live map[float64]map[string][]kube.LiveObject
}

var (
	suitesMu sync.Mutex
	suites   = map[int]*suite{}
)

// suiteOf generates (once per process) the repository of n roots and its
// live snapshots at 0%, 1% and 10% drift.
func suiteOf(tb testing.TB, n int) *suite {
	tb.Helper()
	suitesMu.Lock()
	defer suitesMu.Unlock()
	if s := suites[n]; s != nil {
		return s
	}
	fx, err := synth.NewRepo(seed, n, objectsPerRoot)
	if err != nil {
		tb.Fatal(err)
	}
	s := &suite{fx: fx, live: map[float64]map[string][]kube.LiveObject{}}
	for _, d := range []float64{0, 0.01, 0.10} {
		if s.live[d], _, err = fx.LiveObjects(d, readLive); err != nil {
			tb.Fatal(err)
		}
	}
	suites[n] = s
	return s
}

// buildAll is the baseline: what `kustomize build` of every root costs,
// the repository loaded into one in-memory filesystem once.
func buildAll(tb testing.TB, s *suite) {
	fsys, err := s.fx.Repo.FS()
	if err != nil {
		tb.Fatal(err)
	}
	for _, root := range s.fx.Roots {
		if _, err := synth.Build(fsys, root); err != nil {
			tb.Fatal(err)
		}
	}
}

// readLive reads a synthetic snapshot the way a poll reads a cluster.
func readLive(root string, data []byte) ([]kube.LiveObject, error) {
	return cluster.ParseLive(root, data, cluster.DefaultRules())
}

// planAll plans every root as a poller would: one snapshot for the pass
// (the fan-in map is built the first time a plan writes a file), then a
// plan per root.
func planAll(tb testing.TB, s *suite, live map[string][]kube.LiveObject, cache *analyzer.RenderCache) {
	snap := analyzer.NewSnapshot(s.fx.Repo, cache)
	for _, root := range s.fx.Roots {
		planRoot(tb, snap, root, live)
	}
}

// planRoot is one root's plan within a pass.
func planRoot(tb testing.TB, snap *analyzer.Snapshot, root string, live map[string][]kube.LiveObject) {
	if _, err := snap.Plan(root, live[root], analyzer.Options{}); err != nil {
		tb.Fatal(err)
	}
}

// peak samples the process's memory while a measured section runs.
type peak struct {
	stop      chan struct{}
	done      chan struct{}
	heap, sys uint64
}

func startPeak() *peak {
	p := &peak{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		t := time.NewTicker(25 * time.Millisecond)
		defer t.Stop()
		for {
			p.sample()
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
	return p
}

func (p *peak) sample() {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	p.heap = max(p.heap, m.HeapInuse)
	p.sys = max(p.sys, m.Sys-m.HeapReleased)
}

func (p *peak) end() {
	close(p.stop)
	<-p.done
	p.sample()
}

func (p *peak) report(b *testing.B) {
	b.ReportMetric(float64(p.heap)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(p.sys)/(1<<20), "peak-sys-MiB")
}

// BenchmarkBuild is the baseline alone: a plain kustomize build of every
// root, per op.
func BenchmarkBuild(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("roots=%d", n), func(b *testing.B) {
			s := suiteOf(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				buildAll(b, s)
			}
			b.ReportMetric(float64(len(s.fx.Roots)), "roots")
		})
	}
}

// interleaved plans every root as planAll does and times, root by root,
// a plain build of the same root just before its plan, with the benchmark
// timer running for the plans only. Both sides of the ratio then see the
// same machine load to within one root's build: on shared cores whose
// speed swings by a third within a minute, timing all baselines and then
// all plans measures the swing, not the plan.
func interleaved(b *testing.B, s *suite, live map[string][]kube.LiveObject, cache *analyzer.RenderCache) (base, plan time.Duration, builds int64) {
	b.StopTimer()
	fsys, err := s.fx.Repo.FS()
	if err != nil {
		b.Fatal(err)
	}
	snap := analyzer.NewSnapshot(s.fx.Repo, cache)
	for _, root := range s.fx.Roots {
		b.StopTimer()
		t0 := time.Now()
		if _, err := synth.Build(fsys, root); err != nil {
			b.Fatal(err)
		}
		base += time.Since(t0)
		k0 := snap.Builds()
		b.StartTimer()
		t1 := time.Now()
		planRoot(b, snap, root, live)
		plan += time.Since(t1)
		builds += snap.Builds() - k0
	}
	return base, plan, builds
}

// BenchmarkPlan times a cold plan of every root (no render cache, as on a
// poller's first pass or after a commit touching every root) against a
// plain build of every root, interleaved root by root (see interleaved),
// so x-baseline compares the two under the same machine load. ns/op, B/op
// and allocs/op are the plan's alone.
func BenchmarkPlan(b *testing.B) {
	for _, n := range sizes {
		for _, d := range []float64{0, 0.01, 0.10} {
			b.Run(fmt.Sprintf("roots=%d/drift=%g%%", n, d*100), func(b *testing.B) {
				s := suiteOf(b, n)
				live := s.live[d]
				runtime.GC()
				b.ReportAllocs()
				b.ResetTimer()
				var base, plan time.Duration
				var builds int64
				pk := startPeak()
				for range b.N {
					bt, pt, k := interleaved(b, s, live, nil)
					base, plan, builds = base+bt, plan+pt, builds+k
				}
				b.StopTimer()
				pk.end()
				b.ReportMetric(float64(plan)/float64(base), "x-baseline")
				b.ReportMetric(float64(builds)/float64(b.N)/float64(n), "builds/root")
				pk.report(b)
			})
		}
	}
}

// BenchmarkIdlePoll is a poll with nothing changed since the last one: the
// same commit and the same live objects (1% drifted, as a cluster with a
// few open PRs is), with the render cache the previous poll filled. It
// must run no kustomize build: builds/op reports it, and the benchmark
// fails otherwise.
func BenchmarkIdlePoll(b *testing.B) {
	for _, n := range sizes {
		b.Run(fmt.Sprintf("roots=%d", n), func(b *testing.B) {
			s := suiteOf(b, n)
			live := s.live[0.01]
			cache := analyzer.NewRenderCache(0)
			planAll(b, s, live, cache) // the previous poll
			runtime.GC()
			b.ReportAllocs()
			b.ResetTimer()
			var base, poll time.Duration
			var builds int64
			for range b.N {
				bt, pt, k := interleaved(b, s, live, cache)
				base, poll, builds = base+bt, poll+pt, builds+k
			}
			b.ReportMetric(float64(poll)/float64(base), "x-baseline")
			b.ReportMetric(float64(builds)/float64(b.N), "builds/op")
			if builds != 0 {
				b.Errorf("an idle poll ran %d kustomize builds", builds)
			}
		})
	}
}

// BenchmarkMemory plans the largest size (500 roots, 5,000 objects) at 10%
// drift once per op and reports the peak; it fails above 1 GiB.
func BenchmarkMemory(b *testing.B) {
	n := sizes[len(sizes)-1]
	b.Run(fmt.Sprintf("roots=%d", n), func(b *testing.B) {
		s := suiteOf(b, n)
		runtime.GC()
		pk := startPeak()
		for range b.N {
			planAll(b, s, s.live[0.10], nil)
		}
		pk.end()
		pk.report(b)
		b.ReportMetric(float64(s.fx.Objects), "objects")
		if pk.sys > memoryLimit {
			b.Errorf("peak memory %d MiB is above the 1 GiB budget", pk.sys>>20)
		}
	})
}
