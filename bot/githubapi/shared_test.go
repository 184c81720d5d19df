package githubapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// memoryRecord is a SharedRecord in memory, for processes of one test.
type memoryRecord struct{ text string }

func (r *memoryRecord) Update(_ context.Context, change func(old string) string) error {
	r.text = change(r.text)
	return nil
}

// The shared record stays small however long the installation writes
// (issue 54: Lease contents bounded by design, not by count): three
// hours of writes, three a minute, a Sync a minute, and the record never
// holds more than the minutes of the last hour; a process started from
// it counts the hour's 180 writes, or a minute's more (each is taken at
// the end of its minute), never fewer.
func TestSharedRecordHoldsTheLastHourOnly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	defer srv.Close()
	now := time.Unix(1_700_000_000, 0)
	tr := testTransport(&now)
	client := &http.Client{Transport: tr}
	rec := &memoryRecord{}
	longest := 0
	for range 3 * 60 {
		for range 3 {
			now = now.Add(20 * time.Second)
			resp, err := client.Post(srv.URL+"/repos/o/r/git/blobs", "application/json", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
		if err := tr.Sync(context.Background(), rec, now); err != nil {
			t.Fatal(err)
		}
		var r record
		if err := json.Unmarshal([]byte(rec.text), &r); err != nil {
			t.Fatalf("%q: %v", rec.text, err)
		}
		if len(r.Writes) > 61 {
			t.Fatalf("the record holds %d minutes", len(r.Writes))
		}
		longest = max(longest, len(rec.text))
	}
	t.Logf("the record: at most %d bytes", longest)
	if longest > 400 {
		t.Errorf("the record grew to %d bytes", longest)
	}
	next := &Limits{}
	if err := next.Sync(context.Background(), rec, now); err != nil {
		t.Fatal(err)
	}
	if n := len(next.installationWrites(now)); n < 180 || n > 183 {
		t.Errorf("a new process counts %d writes in the hour, want 180 to 183", n)
	}
}
