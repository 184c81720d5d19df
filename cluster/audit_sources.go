package cluster

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// The two ways an audit stream reaches a trail: the log backend's file,
// read where it grows, and the webhook backend's posts.

// auditStartBytes bounds the first read of a log file (and of a rotated
// one): after a restart the trail is rebuilt from the newest part of the
// log, not from a file that may hold months.
const auditStartBytes = 64 << 20

// auditChunk bounds one read, so a burst is taken in steps.
const auditChunk = 8 << 20

// auditFile is where the trail has read a log file up to.
type auditFile struct {
	path   string
	offset int64
	info   os.FileInfo // the file read, to notice a rotation
}

// FollowFile makes Refresh read the audit log file at path (the log
// backend's --audit-log-path, JSON lines).
func (t *AuditTrail) FollowFile(path string) {
	t.mu.Lock()
	t.file = &auditFile{path: path}
	t.mu.Unlock()
}

// Refresh reads what the followed log file gained since the last read: the
// newest auditStartBytes the first time and after a rotation, then only
// whole lines appended. A trail without a file has nothing to do. A file
// that cannot be read is an error, and the trail keeps what it had.
func (t *AuditTrail) Refresh() error {
	if t == nil {
		return nil
	}
	t.reading.Lock()
	defer t.reading.Unlock()
	t.mu.Lock()
	f := t.file
	t.mu.Unlock()
	if f == nil {
		return nil
	}
	fh, err := os.Open(f.path)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	if !info.Mode().IsRegular() {
		return fmt.Errorf("audit log %s is not a regular file", f.path)
	}
	skipPartial := false
	if f.info == nil || !os.SameFile(f.info, info) || info.Size() < f.offset {
		// New, rotated or truncated: start again near its end.
		f.offset = max(0, info.Size()-auditStartBytes)
		skipPartial = f.offset > 0
	}
	f.info = info
	for f.offset < info.Size() {
		buf := make([]byte, min(auditChunk, info.Size()-f.offset))
		n, err := fh.ReadAt(buf, f.offset)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("audit log: %w", err)
		}
		buf = buf[:n]
		start := 0
		if skipPartial {
			// Started inside a line: it begins after the first newline.
			i := bytes.IndexByte(buf, '\n')
			if i < 0 {
				f.offset += int64(n)
				continue
			}
			start, skipPartial = i+1, false
		}
		end := bytes.LastIndexByte(buf, '\n') + 1
		if end <= start {
			if n == auditChunk {
				// One line longer than a chunk: an event with a huge body.
				// Skip it whole rather than hold it.
				f.offset += int64(n)
				skipPartial = true
				t.countMalformed()
				continue
			}
			break // a line still being written: next time
		}
		t.addLines(buf[start:end])
		f.offset += int64(end)
	}
	return nil
}

// auditPostLimit bounds one webhook post. The apiserver's batches are a
// few hundred events; a policy that logs bodies can make them large.
const auditPostLimit = 32 << 20

// Handler receives the audit webhook backend's posts. Each must carry
// "Authorization: Bearer <token>" with the token token returns (read per
// request, so a rotated token file takes effect at once): the audit
// stream names users, and only the apiserver may feed it.
func (t *AuditTrail) Handler(token func() (string, error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "POST an audit.k8s.io/v1 EventList", http.StatusMethodNotAllowed)
			return
		}
		want, err := token()
		if err != nil {
			http.Error(w, "audit webhook: token unavailable", http.StatusServiceUnavailable)
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || want == "" || subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), []byte(want)) != 1 {
			http.Error(w, errAuditUnauthorized.Error(), http.StatusUnauthorized)
			return
		}
		body := http.MaxBytesReader(w, r.Body, auditPostLimit)
		if err := t.Receive(body); err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, "audit webhook: post over 32 MiB", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "audit webhook: "+err.Error(), http.StatusBadRequest)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
}
