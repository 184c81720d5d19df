package githubapi

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// GitHub's older wording of a secondary limit ("abuse detection") is a
// limit too, and a plain permission refusal is not (issue 30, item 9).
func TestSecondaryLimitInEitherWording(t *testing.T) {
	for body, want := range map[string]bool{
		`{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}`: true,
		`{"message":"You have triggered an abuse detection mechanism. Please wait a few minutes before you try again.","documentation_url":"https://developer.github.com/v3/#abuse-rate-limits"}`:                                      true,
		`{"message":"Resource not accessible by integration","documentation_url":"https://docs.github.com/rest/checks/runs#create-a-check-run"}`:                                                                                       false,
	} {
		resp := &http.Response{StatusCode: http.StatusForbidden, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(body))}
		if got := secondaryBody(resp); got != want {
			t.Errorf("%s: limit %v, want %v", body, got, want)
		}
		if rest, _ := io.ReadAll(resp.Body); string(rest) != body {
			t.Errorf("the body was not put back: %q", rest)
		}
	}
}

// Mutations are spaced and capped per hour, whatever the callers do.
func TestMutationBudget(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) }))
	defer srv.Close()
	now := time.Unix(1_700_000_000, 0)
	var slept []time.Duration
	tr := &resilientTransport{base: http.DefaultTransport, opts: ClientOptions{
		Now: func() time.Time { return now }, MutationGap: time.Second, MaxRetries: 1, Metrics: &counts{},
		Sleep: func(_ context.Context, d time.Duration) error { slept = append(slept, d); now = now.Add(d); return nil },
	}}
	client := &http.Client{Transport: tr}
	for i := 0; i < mutationsPerHour+1; i++ {
		resp, err := client.Post(srv.URL, "application/json", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if len(slept) != mutationsPerHour+1 {
		t.Fatalf("slept %d times", len(slept))
	}
	last := slept[len(slept)-1]
	if last < 50*time.Minute {
		t.Errorf("the %dth mutation in an hour waited only %v", mutationsPerHour+1, last)
	}
}
