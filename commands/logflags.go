package commands

import (
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"
)

// The logging flags are the root's, so every command takes them; their
// values are checked as the command line is parsed, so a value one
// command refuses every command refuses (exit 2), whether it logs or not.

// logLevels are the values --log-level accepts, in any letter case.
var logLevels = []struct {
	name  string
	level slog.Level
}{{"debug", slog.LevelDebug}, {"info", slog.LevelInfo}, {"warn", slog.LevelWarn}, {"error", slog.LevelError}}

// logFormats are the values --log-format accepts.
var logFormats = []string{"json", "text"}

// logLevelFlag is --log-level: the least severe level logged.
type logLevelFlag slog.Level

func (l *logLevelFlag) String() string {
	for _, v := range logLevels {
		if v.level == slog.Level(*l) {
			return v.name
		}
	}
	return slog.Level(*l).String()
}

func (l *logLevelFlag) Set(s string) error {
	for _, v := range logLevels {
		if strings.EqualFold(s, v.name) {
			*l = logLevelFlag(v.level)
			return nil
		}
	}
	return fmt.Errorf("use %s", orList(logLevelNames()))
}

func (l *logLevelFlag) Type() string { return "level" }

// logFormatFlag is --log-format.
type logFormatFlag string

func (f *logFormatFlag) String() string { return string(*f) }

func (f *logFormatFlag) Set(s string) error {
	for _, v := range logFormats {
		if s == v {
			*f = logFormatFlag(s)
			return nil
		}
	}
	return fmt.Errorf("use %s", orList(logFormats))
}

func (f *logFormatFlag) Type() string { return "format" }

func logLevelNames() []string {
	var names []string
	for _, v := range logLevels {
		names = append(names, v.name)
	}
	return names
}

// orList is "a, b or c".
func orList(s []string) string { return wordList(s, "or") }

// wordList is "a, b CONJ c".
func wordList(s []string, conj string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " " + conj + " " + s[len(s)-1]
}

// addLogFlags gives every command the same logging flags.
func addLogFlags(root *cobra.Command) {
	level, format := logLevelFlag(slog.LevelInfo), logFormatFlag("json")
	f := root.PersistentFlags()
	f.Var(&format, "log-format", "log format: json (one object a line, for log collectors) or text")
	f.Var(&level, "log-level", "least severe level logged: "+orList(logLevelNames())+"; plan, and targets --repo, log their stages only when it is given")
	root.RegisterFlagCompletionFunc("log-format", cobra.FixedCompletions(logFormats, cobra.ShellCompDirectiveNoFileComp))
	root.RegisterFlagCompletionFunc("log-level", cobra.FixedCompletions(logLevelNames(), cobra.ShellCompDirectiveNoFileComp))
}

// newLogger builds the logger the flags ask for, writing to w.
func newLogger(cmd *cobra.Command, w io.Writer) *slog.Logger {
	level := slog.LevelInfo
	if l, ok := cmd.Flags().Lookup("log-level").Value.(*logLevelFlag); ok {
		level = slog.Level(*l)
	}
	opts := &slog.HandlerOptions{Level: level}
	if cmd.Flags().Lookup("log-format").Value.String() == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}
