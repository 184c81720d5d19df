package bot

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/bot/githubapi"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/githubtest"
	"github.com/driftback/driftback/internal/memlimit"
)

// botChildEnv, when set, makes the test binary a bot process of its own
// (TestMain, botChild): the config file to run is its value; botClockEnv
// is the virtual clock's start, in Unix nanoseconds.
const (
	botChildEnv = "DRIFTBACK_BOT_CHILD"
	botClockEnv = "DRIFTBACK_BOT_CLOCK"
)

// botProcess is a bot in a process of its own (this test binary again,
// see botChild), so a benchmark's figures are the bot's alone, not those
// of the GitHub test server and the test beside it. Both processes keep
// one virtual clock: the bot's waits are asked of this process, which
// moves the server's clock instead of sleeping.
type botProcess struct {
	b     *testing.B
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Scanner
	clock *githubtest.Clock
}

// startBotProcess starts the bot of the config at cfgPath, told a
// container limit of memoryBudget as deploy/ sets up a 512Mi pod (from
// which it sets its Go memory limit as `run` does; a GOMEMLIMIT in this
// process's environment overrides it, GOMEMLIMIT=off runs without one).
func startBotProcess(b *testing.B, cfgPath string, clock *githubtest.Clock) *botProcess {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	container := memlimit.ContainerMemoryEnv + "=" + strconv.Itoa(memoryBudget)
	cmd.Env = append(os.Environ(), botChildEnv+"="+cfgPath, botClockEnv+"="+strconv.FormatInt(clock.Now().UnixNano(), 10), container)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &botProcess{b: b, cmd: cmd, in: in, out: bufio.NewScanner(out), clock: clock}
	b.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	return p
}

// ask sends a command and answers the bot's waits until it replies.
func (p *botProcess) ask(cmd string) string {
	fmt.Fprintln(p.in, cmd)
	for {
		if !p.out.Scan() {
			p.b.Fatalf("the bot process ended on %q: %v", cmd, p.cmd.Wait())
		}
		d, isWait := strings.CutPrefix(p.out.Text(), "wait ")
		if !isWait {
			return p.out.Text()
		}
		ns, err := strconv.ParseInt(d, 10, 64)
		if err != nil {
			p.b.Fatalf("the bot asked to wait %q", d)
		}
		p.clock.Advance(time.Duration(ns))
		fmt.Fprintln(p.in, p.clock.Now().UnixNano())
	}
}

// poll is one round of every target at the clock's time now, and the
// rounds after the pauses it met (botChild waits those out); round is one
// round only, as a runner's tick makes it. Either fails the benchmark on
// an error that is not a pause.
func (p *botProcess) poll()  { p.at("poll") }
func (p *botProcess) round() { p.at("round") }

func (p *botProcess) at(cmd string) {
	p.ask("clock " + strconv.FormatInt(p.clock.Now().UnixNano(), 10))
	if got := p.ask(cmd); got != "ok" {
		p.b.Fatalf("%s: %s", cmd, got)
	}
}

// usage is the bot process's CPU time so far and its peak resident
// memory.
func (p *botProcess) usage() botUsage {
	var u botUsage
	if err := json.Unmarshal([]byte(p.ask("usage")), &u); err != nil {
		p.b.Fatalf("the bot's usage: %v", err)
	}
	return u
}

// close ends the bot process (its stdin closed) and waits for it.
func (p *botProcess) close() {
	p.in.Close()
	if err := p.cmd.Wait(); err != nil {
		p.b.Fatalf("the bot process: %v", err)
	}
}

// botUsage is what botChild answers to "usage".
type botUsage struct {
	CPU     time.Duration
	PeakRSS int64
}

// memoryFigures is what botChild answers to "figures".
type memoryFigures struct {
	PeakRSS, PeakHeap, PeakLive, HeapAfterGC int64
}

// pausedUntil is when a round that ended on err may write again: a pause
// (a rate limit, the hourly budget) or check runs deferred for the budget's
// reserve; ok is false for any other outcome.
func pausedUntil(err error) (time.Time, bool) {
	var paused *githubapi.PausedError
	var deferred *githubapi.DeferredError
	switch {
	case errors.As(err, &paused):
		return paused.Until, true
	case errors.As(err, &deferred):
		return deferred.Until, true
	}
	return time.Time{}, false
}

// botChild is the bot of a botProcess: the runner built from the config
// file as `run` builds it (the App's client, its bot login, the
// production cache budgets). A cluster with a kubeconfig is read through
// it as `run` reads one; a target on any other cluster reads its live
// objects from the file <target>.json beside the config. Commands, one a
// line on stdin:
//
//	clock NS   set the clock (the other process moved it); answers ok
//	poll       one round of every target; answers ok or the error. A
//	           round stopped by a pause (the hourly write budget) is
//	           polled again once the pause is over, as a runner would.
//	round      one round of every target, as a runner's tick makes it;
//	           answers ok (also when a pause stopped it) or the error
//	pending    how many targets have not reconciled once
//	usage      CPU time and peak resident memory (botUsage)
//	figures    the memory figures (memoryFigures), once
//	profile F  start a CPU profile into the file F; "profile" alone
//	           stops it
//
// A wait is the line "wait <ns>" out, answered by the clock's new time.
// The process ends when stdin closes.
func botChild(cfgPath string) int {
	fail := func(err error) int {
		fmt.Println("error:", strings.ReplaceAll(err.Error(), "\n", " "))
		return 1
	}
	if _, err := memlimit.SetMemoryLimit(os.Getenv); err != nil {
		return fail(err)
	}
	start, err := strconv.ParseInt(os.Getenv(botClockEnv), 10, 64)
	if err != nil {
		return fail(err)
	}
	in := bufio.NewScanner(os.Stdin)
	var clockMu sync.Mutex
	now := time.Unix(0, start)
	// The production client, but for the clock.
	opts := githubapi.ClientOptions{
		Now: func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now },
		Sleep: func(ctx context.Context, d time.Duration) error {
			clockMu.Lock()
			defer clockMu.Unlock()
			fmt.Printf("wait %d\n", d.Nanoseconds())
			if !in.Scan() {
				return errors.New("the benchmark's clock is gone")
			}
			ns, err := strconv.ParseInt(in.Text(), 10, 64)
			if err != nil {
				return err
			}
			now = time.Unix(0, ns)
			return ctx.Err()
		},
	}
	ctx := context.Background()
	r, err := childRunner(ctx, cfgPath, opts)
	if err != nil {
		return fail(err)
	}
	pk := startPeakHeap(os.Getenv("DRIFTBACK_MEMORY_PROFILE"))
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		switch cmd {
		case "clock":
			ns, err := strconv.ParseInt(arg, 10, 64)
			if err != nil {
				return fail(err)
			}
			clockMu.Lock()
			now = time.Unix(0, ns)
			clockMu.Unlock()
			fmt.Println("ok")
		case "poll":
			err := r.PollOnce(ctx)
			for until, ok := pausedUntil(err); ok; until, ok = pausedUntil(err) {
				if err = opts.Sleep(ctx, until.Sub(opts.Now())); err == nil {
					err = r.PollOnce(ctx)
				}
			}
			if err != nil {
				fmt.Println("error:", strings.ReplaceAll(err.Error(), "\n", " "))
				continue
			}
			fmt.Println("ok")
		case "round":
			if err := r.PollOnce(ctx); err != nil {
				if _, paused := pausedUntil(err); !paused {
					fmt.Println("error:", strings.ReplaceAll(err.Error(), "\n", " "))
					continue
				}
			}
			fmt.Println("ok")
		case "pending":
			n := 0
			for _, t := range r.Targets {
				if _, ok := r.Bot.memory.Get(t.Config.Name); !ok {
					n++
				}
			}
			fmt.Println(n)
		case "usage":
			rss, err := peakRSS()
			if err != nil {
				return fail(err)
			}
			out, _ := json.Marshal(botUsage{CPU: cpuTime(), PeakRSS: rss})
			fmt.Println(string(out))
		case "profile":
			pprof.StopCPUProfile()
			if arg != "" {
				f, err := os.Create(arg)
				if err != nil {
					return fail(err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return fail(err)
				}
			}
			fmt.Println("ok")
		case "figures":
			out, err := memoryFiguresNow(pk, r)
			if err != nil {
				return fail(err)
			}
			fmt.Println(string(out))
		default:
			return fail(fmt.Errorf("unknown command %q", in.Text()))
		}
	}
	return 0
}

// childRunner builds botChild's runner.
func childRunner(ctx context.Context, cfgPath string, opts githubapi.ClientOptions) (*Runner, error) {
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return nil, err
	}
	pemKey, err := os.ReadFile(cfg.GitHub.PrivateKeyFile)
	if err != nil {
		return nil, err
	}
	auth := githubapi.AppAuth{AppID: cfg.GitHub.AppID, PrivateKey: pemKey, InstallationID: cfg.GitHub.InstallationID, BaseURL: cfg.GitHub.APIURL}
	gh, err := githubapi.NewClient(auth, opts)
	if err != nil {
		return nil, err
	}
	login, err := githubapi.AppLogin(ctx, auth, opts)
	if err != nil {
		return nil, err
	}
	listers := map[string]cluster.Lister{}
	for _, c := range cfg.Clusters {
		if c.Kubeconfig == "" {
			continue
		}
		rc, err := cluster.RESTConfig(c.Kubeconfig, c.Context)
		if err != nil {
			return nil, err
		}
		rc.QPS, rc.Burst = float32(c.QPS), int(c.Burst)
		l, err := cluster.NewClientLister(rc)
		if err != nil {
			return nil, err
		}
		if err := l.KeepWatched(ctx); err != nil { // as a long-running `run` does
			return nil, err
		}
		listers[c.Name] = l
	}
	r := &Runner{Bot: New(gh, Options{AppID: cfg.GitHub.AppID, Login: login, RenderBytes: analyzer.DefaultRenderCacheBytes}), Interval: time.Minute}
	for _, t := range cfg.ResolvedTargets() {
		l := listers[t.Cluster]
		if l == nil {
			l = cluster.ObjectFileLister{Path: filepath.Join(filepath.Dir(cfgPath), t.Name+".json")}
		}
		r.Targets = append(r.Targets, &Target{Config: *t, Lister: l})
	}
	return r, nil
}

// memoryFiguresNow ends the heap sampling and measures what the bot keeps
// after a GC (with DRIFTBACK_MEMORY_PROFILE, beside the peak's profile).
func memoryFiguresNow(pk *peakHeap, r *Runner) ([]byte, error) {
	heap, live := pk.end()
	runtime.GC()
	if prof := os.Getenv("DRIFTBACK_MEMORY_PROFILE"); prof != "" {
		if f, err := os.Create(prof + ".end"); err == nil {
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	rss, err := peakRSS()
	if err != nil {
		return nil, err
	}
	runtime.KeepAlive(r) // the heap after GC is what the bot keeps
	return json.Marshal(memoryFigures{PeakRSS: rss, PeakHeap: int64(heap), PeakLive: int64(live), HeapAfterGC: int64(ms.HeapAlloc)})
}
