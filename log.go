package main

import (
	"fmt"
	"io"
	"log/slog"
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
