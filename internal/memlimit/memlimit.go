package memlimit

import (
	"fmt"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
)

// ContainerMemoryEnv is the environment variable deploy/ fills with the
// container's memory limit in bytes (resources.limits.memory).
const ContainerMemoryEnv = "DRIFTBACK_CONTAINER_MEMORY"

// goMemoryPercent is the part of the container's memory given to the Go
// runtime's soft limit. The rest is what that limit does not count but the
// container's does: the binary's pages in memory (about 65 MiB), and the
// overshoot while the collector catches up with a burst of allocations.
const goMemoryPercent = 85

// GoMemoryLimit is the Go runtime's soft memory limit for a container
// limited to container bytes.
func GoMemoryLimit(container int64) int64 {
	return int64(float64(container) * goMemoryPercent / 100)
}

// SetMemoryLimit sets the Go runtime's soft memory limit from the
// container's memory limit (ContainerMemoryEnv, read through getenv) and
// returns it. An explicit GOMEMLIMIT wins (the runtime read it at start);
// neither set, or GOMEMLIMIT=off, leaves no limit (0).
func SetMemoryLimit(getenv func(string) string) (int64, error) {
	if getenv("GOMEMLIMIT") != "" {
		if limit := debug.SetMemoryLimit(-1); limit < math.MaxInt64 {
			return limit, nil
		}
		return 0, nil
	}
	v := strings.TrimSpace(getenv(ContainerMemoryEnv))
	if v == "" {
		return 0, nil
	}
	container, err := strconv.ParseInt(v, 10, 64)
	if err != nil || container <= 0 {
		return 0, fmt.Errorf("%s=%q: want the container's memory limit in bytes", ContainerMemoryEnv, v)
	}
	limit := GoMemoryLimit(container)
	debug.SetMemoryLimit(limit)
	return limit, nil
}
