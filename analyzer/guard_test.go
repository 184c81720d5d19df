package analyzer

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// hostileBound is how long one hostile repository may take to plan.
const hostileBound = 20 * time.Second

// hostileAllocBound caps what one hostile plan may allocate in total (every
// allocation counts, freed or not), so an expansion bomb shows up as a
// failure rather than as a machine out of memory.
const hostileAllocBound = 1 << 30

// netGuard makes any attempt to reach the network observable: HTTP(S)
// proxies point at a local listener that counts connections, the default
// HTTP transport records every request, and PATH holds only a fake git that
// leaves a marker when run (kustomize clones remote bases with git).
type netGuard struct {
	conns  atomic.Int64
	marker string
	mu     sync.Mutex
	urls   []string
}

type recordingTransport struct{ g *netGuard }

func (rt recordingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rt.g.mu.Lock()
	rt.g.urls = append(rt.g.urls, r.URL.String())
	rt.g.mu.Unlock()
	return nil, fmt.Errorf("driftback test: network access to %s", r.URL)
}

// guardNetwork installs the guard for the rest of the test and checks, when
// the test ends, that nothing was attempted.
func guardNetwork(t *testing.T) *netGuard {
	t.Helper()
	g := &netGuard{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			g.conns.Add(1)
			c.Close()
		}
	}()
	proxy := "http://" + ln.Addr().String()
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"} {
		t.Setenv(k, proxy)
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
	bin := t.TempDir()
	g.marker = filepath.Join(t.TempDir(), "git-ran")
	script := "#!/bin/sh\necho \"$@\" >> '" + g.marker + "'\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
	old := http.DefaultTransport
	http.DefaultTransport = recordingTransport{g}
	t.Cleanup(func() {
		http.DefaultTransport = old
		ln.Close()
		if n := g.conns.Load(); n > 0 {
			t.Errorf("%d connection(s) reached the test proxy", n)
		}
		if len(g.urls) > 0 {
			t.Errorf("HTTP requests were made: %v", g.urls)
		}
		if b, err := os.ReadFile(g.marker); err == nil {
			t.Errorf("git was executed: %s", b)
		}
	})
	return g
}

// bounded runs f and fails the test when it takes longer than hostileBound,
// panics, or allocates more than hostileAllocBound.
func bounded(t *testing.T, what string, f func()) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	done := make(chan any, 1)
	start := time.Now()
	go func() {
		defer func() { done <- recover() }()
		f()
	}()
	select {
	case p := <-done:
		if p != nil {
			t.Fatalf("%s panicked: %v", what, p)
		}
	case <-time.After(hostileBound):
		t.Fatalf("%s took more than %s", what, hostileBound)
	}
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%s: %s, %d MiB allocated", what, time.Since(start).Round(time.Millisecond), alloc>>20)
	if alloc > hostileAllocBound {
		t.Fatalf("%s allocated %d MiB (bound %d MiB)", what, alloc>>20, hostileAllocBound>>20)
	}
}
