package commands

import (
	"bufio"
	"log/slog"
	"os"
	"strings"
)

// maxLibraryMessages bounds the distinct library messages remembered: each
// is logged once, however many builds print it.
const maxLibraryMessages = 1000

// captureStderr routes what libraries print straight to the process's
// standard error (kustomize's "# Warning: 'commonLabels' is deprecated",
// once per build) through log, so that --log-format json emits only JSON
// lines; log must write to the real standard error, which the returned
// function puts back. A line is logged once per process: the same warning
// comes with every build of the same kustomization.
func captureStderr(log *slog.Logger) (restore func(), err error) {
	real := os.Stderr
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	os.Stderr = w
	done := make(chan struct{})
	go func() {
		defer close(done)
		seen := map[string]bool{}
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "#"))
			if line == "" || seen[line] {
				continue
			}
			if len(seen) < maxLibraryMessages {
				seen[line] = true
			}
			log.Warn("library message", "message", line)
		}
	}()
	return func() {
		os.Stderr = real
		w.Close()
		<-done
		r.Close()
	}, nil
}
