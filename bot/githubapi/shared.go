package githubapi

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"sync"
	"time"
)

// SharedRecord keeps what every process of an installation learned of
// its limits beyond the process, so that a restart or a rollout does not
// forget them: the content writes of the last hour, counted per minute,
// and the end of a hold GitHub asked for. bot/shard keeps it in a Lease;
// its text is Limits' own (Sync).
type SharedRecord interface {
	// Update calls change with the record's text ("" when there is none)
	// and stores what change returns unless it is that same text. On a
	// conflict (another process stored first) it reads the record again
	// and calls change again.
	Update(ctx context.Context, change func(old string) string) error
}

// sharedWrites is what Limits knows of every process's writes once it
// shares a record, by minute (Unix seconds / 60).
type sharedWrites struct {
	syncing sync.Mutex // one Sync at a time

	mu sync.Mutex
	// on: a Sync succeeded, so the installation's budget applies.
	on bool
	// recorded are the record's counts as last read or stored (this
	// process's stored writes among them); unsent this process's writes
	// not stored yet, and sending those a Sync is storing now.
	recorded, unsent, sending map[int64]int
}

// record is a SharedRecord's text, JSON: a few hundred bytes at most, as
// it holds no minute that left the hour.
type record struct {
	Start  time.Time `json:"start,omitzero"`            // the first minute counted
	Writes []int     `json:"writesPerMinute,omitempty"` // content writes in each minute from Start on
	Hold   time.Time `json:"holdUntil,omitzero"`        // no request before it
}

// Sync stores in rec this process's writes since the last Sync and the
// hold it knows of, and takes what every process stored there: from then
// on a content write also needs the installation's writes of the last
// hour, every process's (those of processes gone too), under
// mutationsPerHour, and no request is sent before the latest hold. On an
// error l keeps its writes for the next Sync and goes on as it was.
func (l *Limits) Sync(ctx context.Context, rec SharedRecord, now time.Time) error {
	w := &l.shared
	w.syncing.Lock()
	defer w.syncing.Unlock()
	w.mu.Lock()
	delta := w.unsent
	w.unsent, w.sending = nil, delta
	w.mu.Unlock()
	l.mu.Lock()
	hold := l.hold
	l.mu.Unlock()
	var stored map[int64]int
	var storedHold time.Time
	err := rec.Update(ctx, func(old string) string {
		stored, storedHold = parseRecord(old, now)
		if len(delta) == 0 && !hold.After(storedHold) {
			return old
		}
		for m, n := range delta {
			if counted(m, now) {
				stored[m] += n
			}
		}
		storedHold = maxTime(storedHold, hold)
		return formatRecord(stored, storedHold, now)
	})
	w.mu.Lock()
	if err != nil {
		for m, n := range w.sending {
			w.unsent = addWrites(w.unsent, m, n, now)
		}
	} else {
		w.recorded, w.on = stored, true
	}
	w.sending = nil
	w.mu.Unlock()
	if err != nil {
		return err
	}
	l.setHold(storedHold)
	return nil
}

// noteWrite counts a content write made at at for the next Sync.
func (l *Limits) noteWrite(at time.Time) {
	w := &l.shared
	w.mu.Lock()
	w.unsent = addWrites(w.unsent, minuteOf(at), 1, at)
	w.mu.Unlock()
}

// installationWrites is every process's writes of the last hour as the
// record and this process know them, oldest first, each at the end of
// its minute (the latest it may have been made, so it leaves the hour no
// earlier than it did): the newest mutationsPerHour, all a budget looks
// at. nil before a Sync succeeded.
func (l *Limits) installationWrites(now time.Time) []time.Time {
	w := &l.shared
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.on {
		return nil
	}
	counts := map[int64]int{}
	for _, c := range []map[int64]int{w.recorded, w.sending, w.unsent} {
		for m, n := range c {
			if counted(m, now) {
				counts[m] += n
			}
		}
	}
	out := []time.Time{}
	minutes := slices.Sorted(maps.Keys(counts))
	for i := len(minutes) - 1; i >= 0 && len(out) < mutationsPerHour; i-- {
		end := minuteStart(minutes[i] + 1)
		for range min(counts[minutes[i]], mutationsPerHour-len(out)) {
			out = append(out, end)
		}
	}
	slices.Reverse(out)
	return out
}

// addWrites adds n writes in minute m to counts, and drops the minutes
// that left the hour, so counts stays small however long it is kept.
func addWrites(counts map[int64]int, m int64, n int, now time.Time) map[int64]int {
	if counts == nil {
		counts = map[int64]int{}
	}
	counts[m] += n
	maps.DeleteFunc(counts, func(m int64, _ int) bool { return !counted(m, now) })
	return counts
}

// counted reports whether writes of minute m may still be in the hour
// before now. Minutes more than an hour ahead (a clock far off) are
// not, which bounds the record.
func counted(m int64, now time.Time) bool {
	return minuteStart(m+1).Add(time.Hour).After(now) && m <= minuteOf(now)+60
}

func minuteOf(t time.Time) int64    { return t.Unix() / 60 }
func minuteStart(m int64) time.Time { return time.Unix(m*60, 0) }

// maxWrites bounds one minute's count as read: more than a budget's
// worth is as full as a budget's worth.
func maxWrites(n int) int { return min(max(n, 0), mutationsPerHour) }

// parseRecord reads a record's text: its counts of the minutes still in
// the hour, and its hold. A text that cannot be read counts as empty (it
// is then written over).
func parseRecord(text string, now time.Time) (map[int64]int, time.Time) {
	counts := map[int64]int{}
	var r record
	if text == "" || json.Unmarshal([]byte(text), &r) != nil {
		return counts, time.Time{}
	}
	first := minuteOf(r.Start)
	for i, n := range r.Writes[:min(len(r.Writes), 3*60)] {
		if m := first + int64(i); n > 0 && counted(m, now) {
			counts[m] = maxWrites(n)
		}
	}
	return counts, r.Hold
}

// formatRecord is the text of counts and hold: the minutes still in the
// hour, and the hold if it has not ended.
func formatRecord(counts map[int64]int, hold, now time.Time) string {
	var r record
	var minutes []int64
	for m, n := range counts {
		if n > 0 && counted(m, now) {
			minutes = append(minutes, m)
		}
	}
	if len(minutes) > 0 {
		first, last := slices.Min(minutes), slices.Max(minutes)
		r.Start = minuteStart(first).UTC()
		r.Writes = make([]int, last-first+1)
		for _, m := range minutes {
			r.Writes[m-first] = maxWrites(counts[m])
		}
	}
	if hold.After(now) {
		r.Hold = hold.UTC()
	}
	b, _ := json.Marshal(r) // times and ints always marshal
	return string(b)
}
