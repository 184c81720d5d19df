package commands

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// progressAfter is how long a stage of plan runs before it is named on a
// terminal, and how often it is named again while it runs.
var progressAfter = 3 * time.Second

// stderrIsTerminal reports whether w is a terminal; a test stands in for
// one.
var stderrIsTerminal = func(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// progress names, on a terminal, the stage a long plan is in, so that a
// root of thousands of resources is not taken for a hang (a 5,000-resource
// root plans for minutes). It says nothing when stderr is no terminal (a
// pipe, CI, a file) or with -q, and nothing for a stage shorter than
// progressAfter.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	what  string
	since time.Time
	said  time.Time
	stop  chan struct{}
}

// newProgress is the progress of one plan on w; nil (quiet) when w is no
// terminal or quiet is set.
func newProgress(w io.Writer, quiet bool) *progress {
	if quiet || !stderrIsTerminal(w) {
		return nil
	}
	p := &progress{w: w, stop: make(chan struct{})}
	go p.tick()
	return p
}

// doing starts a stage.
func (p *progress) doing(what string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.what, p.since, p.said = what, time.Now(), time.Time{}
}

// done ends the last stage and the ticking.
func (p *progress) done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.what = ""
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
	}
}

func (p *progress) tick() {
	p.mu.Lock()
	stop := p.stop
	p.mu.Unlock()
	t := time.NewTicker(min(progressAfter, time.Second) + time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			p.mu.Lock()
			if p.what != "" && now.Sub(p.since) >= progressAfter && now.Sub(p.said) >= progressAfter {
				fmt.Fprintf(p.w, "driftback plan: %s… (%s)\n", p.what, now.Sub(p.since).Round(time.Second))
				p.said = now
			}
			p.mu.Unlock()
		}
	}
}
