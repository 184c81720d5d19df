package githubapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Issue 54, item 9: one attempt of a fenced write ends when the fence
// would close (the replica's last renewal plus its renew deadline), not a
// whole RequestTimeout later, when another replica may hold the target;
// reads and unfenced writes keep RequestTimeout. The fence gives a span:
// the client's clock (here hours ahead, as the scale benchmark's GitHub
// runs) does not move when the fence closes.
func TestFencedWriteAttemptEndsWithTheFence(t *testing.T) {
	fake := time.Unix(1_700_000_000, 0)
	var left []time.Duration // each attempt's time, as the base transport saw it
	tr := &resilientTransport{
		Limits: &Limits{},
		base: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			dl, ok := r.Context().Deadline()
			if !ok {
				t.Errorf("%s %s: an attempt without a deadline", r.Method, r.URL.Path)
			}
			left = append(left, time.Until(dl))
			return &http.Response{StatusCode: http.StatusCreated, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("{}")), Request: r}, nil
		}),
		opts: ClientOptions{
			Now: func() time.Time { return fake.Add(10 * time.Hour) }, RequestTimeout: time.Minute, MutationGap: time.Nanosecond, MaxRetries: 1, Metrics: &counts{},
			Sleep: func(context.Context, time.Duration) error { return nil },
		},
	}
	client := &http.Client{Transport: tr}
	fenced := WithFence(context.Background(), func() (time.Duration, error) { return 2 * time.Second, nil })
	send := func(ctx context.Context, method, path string) error {
		req, _ := http.NewRequestWithContext(ctx, method, "https://api.github.com"+path, strings.NewReader("{}"))
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	for _, c := range []struct {
		ctx          context.Context
		method, path string
		most         time.Duration
	}{
		{fenced, http.MethodPost, "/repos/o/r/pulls", 2 * time.Second},
		{fenced, http.MethodPatch, "/repositories/9/pulls/3", 2 * time.Second},
		{fenced, http.MethodGet, "/repos/o/r/pulls", time.Minute},
		{context.Background(), http.MethodPost, "/repos/o/r/pulls", time.Minute},
	} {
		left = nil
		if err := send(c.ctx, c.method, c.path); err != nil {
			t.Fatalf("%s %s: %v", c.method, c.path, err)
		}
		if len(left) != 1 || left[0] > c.most || left[0] < c.most-10*time.Second {
			t.Errorf("%s %s: the attempt had %v, want at most %s", c.method, c.path, left, c.most)
		}
	}
	// A closed fence sends nothing.
	closed := WithFence(context.Background(), func() (time.Duration, error) { return 0, errors.New("lease lost") })
	left = nil
	var f *FencedError
	if err := send(closed, http.MethodPost, "/repos/o/r/pulls"); !errors.As(err, &f) || len(left) != 0 {
		t.Errorf("a write past the fence: %v, %d attempts; want it fenced, unsent", err, len(left))
	}
}
