package cluster

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

// auditFile is where the trail has read a log file up to. The file stays
// open between reads: after a rotation, what was written to it before the
// rename is still read to its end.
type auditFile struct {
	path   string
	fh     *os.File // the file being read; nil before the first read
	offset int64
	// last is where the last line read starts, and its first bytes (an
	// event's auditID is among them): a file truncated in place and
	// written past offset again no longer holds them there.
	last     int64
	lastHead []byte
}

// auditHead is how much of the last line read is kept to recognise it.
const auditHead = 160

// FollowFile makes Refresh read the audit log file at path (the log
// backend's --audit-log-path, JSON lines).
func (t *AuditTrail) FollowFile(path string) {
	t.reading.Lock()
	defer t.reading.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.file != nil && t.file.fh != nil {
		t.file.fh.Close()
	}
	t.file = &auditFile{path: path}
}

// Close stops following the log file.
func (t *AuditTrail) Close() {
	if t != nil {
		t.FollowFile("")
		t.mu.Lock()
		t.file = nil
		t.mu.Unlock()
	}
}

// Refresh reads what the followed log file gained since the last read: the
// newest auditStartBytes the first time (so a restart does not read months
// of log), then whole lines as they are appended. After a rotation the old
// file is read to its end before the new one is read from its start (its
// newest auditStartBytes at most, as at a start). A file truncated in
// place (logrotate's copytruncate) is read again from its start, once:
// it is known by being shorter than what was read, or by no longer
// holding the last line read where it was (it grew past that point
// again). What was written between the last read and the copy is in the
// copy only, so the trail is whole again only from what comes after. A
// file that cannot be read is an error, and the trail keeps what it had.
func (t *AuditTrail) Refresh() error {
	if t == nil {
		return nil
	}
	t.reading.Lock()
	defer t.reading.Unlock()
	t.mu.Lock()
	f := t.file
	t.mu.Unlock()
	if f == nil || f.path == "" {
		return nil
	}
	cur, err := os.Stat(f.path)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	if !cur.Mode().IsRegular() {
		return fmt.Errorf("audit log %s is not a regular file", f.path)
	}
	if f.fh != nil {
		open, err := f.fh.Stat()
		if err != nil {
			return fmt.Errorf("audit log: %w", err)
		}
		holds, err := f.stillHolds()
		if err != nil {
			return err
		}
		switch {
		case !os.SameFile(open, cur):
			// Rotated: finish the old file, then take the new one from its
			// start, or its newest part when it grew large before this read.
			if err := t.readFrom(f, open.Size()); err != nil {
				return err
			}
			f.fh.Close()
			f.fh, f.offset = nil, 0
			return t.open(f, max(0, cur.Size()-auditStartBytes))
		case open.Size() < f.offset || !holds:
			// Truncated in place: start again past the hole a writer
			// without O_APPEND leaves (NULs up to where it was writing).
			f.offset, f.lastHead = 0, nil
			if err := f.skipNULs(open.Size()); err != nil {
				return err
			}
			t.mu.Lock()
			t.lose()
			t.mu.Unlock()
		}
		return t.readFrom(f, open.Size())
	}
	return t.open(f, max(0, cur.Size()-auditStartBytes))
}

// open starts reading f's path at the first whole line at or after from.
func (t *AuditTrail) open(f *auditFile, from int64) error {
	fh, err := os.Open(f.path)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	info, err := fh.Stat()
	if err != nil {
		fh.Close()
		return fmt.Errorf("audit log: %w", err)
	}
	f.fh, f.offset, f.lastHead = fh, min(from, info.Size()), nil
	if f.offset > 0 {
		t.mu.Lock()
		t.lose() // what lies before is not read
		t.mu.Unlock()
		// Unless the byte before is a newline, from is inside a line: it
		// begins after the next newline.
		if err := f.skipToLine(); err != nil {
			return err
		}
	}
	return t.readFrom(f, info.Size())
}

// skipToLine moves f's offset to the start of the next line, unless it is
// at one already.
func (f *auditFile) skipToLine() error {
	buf := make([]byte, 64<<10)
	at := f.offset - 1 // the byte before
	for {
		n, err := f.fh.ReadAt(buf, at)
		if i := bytes.IndexByte(buf[:n], '\n'); i >= 0 {
			f.offset = at + int64(i) + 1
			return nil
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				f.offset = at + int64(n) // no line starts yet: wait for one
				return nil
			}
			return fmt.Errorf("audit log: %w", err)
		}
		at += int64(n)
	}
}

// stillHolds says whether the file still holds the last line read where
// it was read. A read that fails is an error, never taken for a
// truncation (the file would be read twice).
func (f *auditFile) stillHolds() (bool, error) {
	if f.lastHead == nil {
		return true, nil
	}
	buf := make([]byte, len(f.lastHead))
	n, err := f.fh.ReadAt(buf, f.last)
	if err != nil && !errors.Is(err, io.EOF) {
		return false, fmt.Errorf("audit log: %w", err)
	}
	return bytes.Equal(buf[:n], f.lastHead), nil
}

// skipNULs moves f's offset past NUL bytes, up to size.
func (f *auditFile) skipNULs(size int64) error {
	buf := make([]byte, 64<<10)
	for f.offset < size {
		n, err := f.fh.ReadAt(buf[:min(int64(len(buf)), size-f.offset)], f.offset)
		for i := range n {
			if buf[i] != 0 {
				f.offset += int64(i)
				return nil
			}
		}
		f.offset += int64(n)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("audit log: %w", err)
		}
		if n == 0 {
			return nil
		}
	}
	return nil
}

// readFrom adds the whole lines of f between its offset and size.
func (t *AuditTrail) readFrom(f *auditFile, size int64) error {
	for f.offset < size {
		buf := make([]byte, min(auditChunk, size-f.offset))
		n, err := f.fh.ReadAt(buf, f.offset)
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("audit log: %w", err)
		}
		buf = buf[:n]
		end := bytes.LastIndexByte(buf, '\n') + 1
		if end == 0 {
			if n < auditChunk {
				return nil // a line still being written: next time
			}
			// One line longer than a chunk: an event with a huge body.
			// Skip it whole rather than hold it.
			f.offset += int64(n)
			if err := f.skipToLine(); err != nil {
				return err
			}
			t.mu.Lock()
			t.malformed++
			t.lose() // it may have been a write
			t.mu.Unlock()
			continue
		}
		t.addLines(buf[:end])
		start := int64(bytes.LastIndexByte(buf[:end-1], '\n') + 1)
		f.last = f.offset + start
		f.lastHead = append(f.lastHead[:0], buf[start:min(int64(end), start+auditHead)]...)
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
func (t *AuditTrail) Handler(token func() (string, error), log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
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
		skipped, err := t.Receive(body)
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, "audit webhook: post over 32 MiB", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "audit webhook: "+err.Error(), http.StatusBadRequest)
			return
		}
		if skipped > 0 {
			// Taken: the rest of the batch is kept, and a retry would not
			// mend the bad items. The trail counts them (Malformed).
			log.Warn("audit webhook: items that are not audit events were skipped", "skipped", skipped)
		}
		w.WriteHeader(http.StatusOK)
	})
}
