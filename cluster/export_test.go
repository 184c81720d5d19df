package cluster

// SetPageSize sets the list page size for a test; the returned func puts
// it back.
func SetPageSize(n int64) func() {
	old := pageSize
	pageSize = n
	return func() { pageSize = old }
}

// DigestCached is the digest a listing gave o ("" when none).
func DigestCached(o Object) string { return o.digest }
