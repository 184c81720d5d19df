package main

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// addLogFlags gives every command the same logging flags.
func addLogFlags(root *cobra.Command) {
	root.PersistentFlags().String("log-format", "json", "log format: json (one object a line, for log collectors) or text")
	root.PersistentFlags().String("log-level", "info", "least severe level logged: debug, info, warn or error")
}

// newLogger builds the logger the flags ask for, writing to w.
func newLogger(cmd *cobra.Command, w io.Writer) (*slog.Logger, error) {
	format, _ := cmd.Flags().GetString("log-format")
	level, _ := cmd.Flags().GetString("log-level")
	var lv slog.Level
	switch strings.ToLower(level) {
	case "debug":
		lv = slog.LevelDebug
	case "info":
		lv = slog.LevelInfo
	case "warn", "warning":
		lv = slog.LevelWarn
	case "error":
		lv = slog.LevelError
	default:
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use json or text", format)
}

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
