package cluster

import "time"

// SetPageSize sets the list page size for a test; the returned func puts
// it back.
func SetPageSize(n int64) func() {
	old := pageSize
	pageSize = n
	return func() { pageSize = old }
}

// DigestCached is the digest a listing gave o ("" when none).
func DigestCached(o Object) string {
	if o.digest == nil {
		return ""
	}
	return o.digest.get()
}

// SetWatchSilence sets how long a kept kind may be silent for a test; the
// returned func puts it back.
func SetWatchSilence(d time.Duration) func() {
	old := watchSilence
	watchSilence = d
	return func() { watchSilence = old }
}
