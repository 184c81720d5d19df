package bot

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestWorkflowFilesAreNeverWritten(t *testing.T) {
	for _, p := range []string{".github/workflows/ci.yml", ".github/workflows", "./.github/workflows/x/y.yaml"} {
		if writablePath(p) == nil {
			t.Errorf("%s is writable", p)
		}
	}
	for _, p := range []string{".github/CODEOWNERS", "overlays/prod/kustomization.yaml"} {
		if err := writablePath(p); err != nil {
			t.Errorf("%s refused: %v", p, err)
		}
	}
	if writablePath("../x") == nil {
		t.Error("an escaping path is writable")
	}
}

// Mutations are spaced and capped per hour, whatever the callers do.
func TestMutationBudget(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(201) }))
	defer srv.Close()
	now := time.Unix(1_700_000_000, 0)
	var slept []time.Duration
	tr := &resilientTransport{base: http.DefaultTransport, opts: ClientOptions{
		Now: func() time.Time { return now }, MutationGap: time.Second, MaxRetries: 1, Metrics: NewMetrics(),
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
