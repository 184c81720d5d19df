package commands

import (
	"strings"
	"testing"
)

// The conventions every command shares (issue 41): one exit-code table,
// one set of --log-level values, command lines that name no command are
// errors.

// A command line that names no command exits 2, as an unknown flag does;
// cobra's own help and completion commands print the usage and exit 0.
func TestUnknownCommandsAndTopicsExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{"nope"}, {"help", "nope"}, {"help", "plan", "nope"}, {"help", "config", "nope"},
		{"completion", "nope"}, {"config", "nope"}, {"app", "nope"}, {"plan", "nope"},
		{"--nope"}, {"plan", "--nope"}, {"run", "--nope"}, {"version", "--nope"},
	} {
		out, stderr, code := driftback(t, args...)
		if code != 2 || out != "" || !strings.Contains(stderr, "nope") || !strings.Contains(stderr, "--help' for usage") {
			t.Errorf("%v: exit %d, stdout %.100q, stderr %q", args, code, out, stderr)
		}
	}
	for _, args := range [][]string{{}, {"help"}, {"help", "config", "validate"}, {"completion"}, {"config"}} {
		if out, stderr, code := driftback(t, args...); code != 0 || !strings.Contains(out, "Usage:") {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
}

// Every command takes the same --log-level values, whether it logs or not:
// a value one command refuses, every command refuses.
func TestLogLevelIsOneSetForEveryCommand(t *testing.T) {
	for _, path := range [][]string{{"plan"}, {"run"}, {"demo"}, {"config", "validate"}, {"config", "schema"}, {"app", "create"}, {"version"}} {
		for _, bad := range [][]string{{"--log-level", "verbose"}, {"--log-level", "warning"}, {"--log-format", "xml"}} {
			_, stderr, code := driftback(t, append(append([]string{}, path...), bad...)...)
			if code != 2 || !strings.Contains(stderr, `"`+bad[1]+`" for "`+bad[0]+`"`) || !strings.Contains(stderr, "use ") {
				t.Errorf("%v %v: exit %d %q", path, bad, code, stderr)
			}
		}
	}
	for _, level := range []string{"debug", "info", "warn", "error", "WARN"} {
		if out, stderr, code := driftback(t, "config", "schema", "--log-level", level, "--log-format", "text"); code != 0 || out == "" {
			t.Errorf("--log-level %s: exit %d %q", level, code, stderr)
		}
		plan := []string{"plan", "--repo", "../examples/shop", "--root", "overlays/prod", "--live", "../examples/live.yaml", "--log-level", level}
		if _, stderr, code := driftback(t, plan...); code != 1 {
			t.Errorf("plan --log-level %s: exit %d %q", level, code, stderr)
		}
	}
	// --help lists the one set, and completion offers it.
	if out, _, _ := driftback(t, "run", "--help"); !strings.Contains(out, "--log-level level") || !strings.Contains(out, "debug, info, warn or error") {
		t.Errorf("run --help:\n%s", out)
	}
	if out, _, _ := driftback(t, "__complete", "plan", "--log-level", ""); !strings.HasPrefix(out, "debug\ninfo\nwarn\nerror\n:4\n") {
		t.Errorf("completion of --log-level: %q", out)
	}
}
