package memlimit

import (
	"math"
	"runtime/debug"
	"strings"
	"testing"
)

// The Go runtime's limit is 85% of the container's, an explicit GOMEMLIMIT
// is left alone, and a malformed container limit is an error, not a
// silent run without a limit.
func TestSetMemoryLimit(t *testing.T) {
	prev := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}

	got, err := SetMemoryLimit(env(map[string]string{ContainerMemoryEnv: "536870912"}))
	if err != nil || got != 456340275 {
		t.Fatalf("512Mi container: limit %d (%v), want 456340275 (85%%)", got, err)
	}
	if now := debug.SetMemoryLimit(-1); now != got {
		t.Fatalf("the runtime's limit is %d, want %d", now, got)
	}

	debug.SetMemoryLimit(300 << 20) // as GOMEMLIMIT=300MiB would at start
	got, err = SetMemoryLimit(env(map[string]string{"GOMEMLIMIT": "300MiB", ContainerMemoryEnv: "536870912"}))
	if err != nil || got != 300<<20 || debug.SetMemoryLimit(-1) != 300<<20 {
		t.Fatalf("explicit GOMEMLIMIT: limit %d (%v), runtime %d, want it kept at %d", got, err, debug.SetMemoryLimit(-1), 300<<20)
	}

	debug.SetMemoryLimit(math.MaxInt64)
	if got, err := SetMemoryLimit(env(map[string]string{"GOMEMLIMIT": "off", ContainerMemoryEnv: "536870912"})); err != nil || got != 0 {
		t.Fatalf("GOMEMLIMIT=off: limit %d (%v), want none", got, err)
	}
	if got, err := SetMemoryLimit(env(nil)); err != nil || got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Fatalf("no limit anywhere: %d (%v), want none set", got, err)
	}
	for _, bad := range []string{"512Mi", "-1", "0"} {
		_, err := SetMemoryLimit(env(map[string]string{ContainerMemoryEnv: bad}))
		if err == nil || !strings.Contains(err.Error(), ContainerMemoryEnv) {
			t.Errorf("%s=%q: error %v, want one naming the variable", ContainerMemoryEnv, bad, err)
		}
	}
	if debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("a malformed container limit changed the runtime's limit")
	}
}
