package githubtest

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// GitHub gives a receiver DeliveryDeadline to answer; Deliver fails a
// delivery answered later, as GitHub's Recent Deliveries show it failed.
func TestDeliverKeepsGitHubsDeadline(t *testing.T) {
	defer func(d time.Duration) { DeliveryDeadline = d }(DeliveryDeadline)
	DeliveryDeadline = 100 * time.Millisecond
	release := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer slow.Close()
	defer close(release)
	w := Webhook{Event: "ping", Delivery: "d-1", Payload: []byte(`{"zen":"x"}`)}
	if _, err := Deliver(nil, slow.URL, []byte("s"), w); err == nil || !strings.Contains(err.Error(), "did not answer within 100ms") {
		t.Fatalf("a receiver that does not answer: %v", err)
	}
	quick := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) }))
	defer quick.Close()
	if code, err := Deliver(nil, quick.URL, []byte("s"), w); err != nil || code != http.StatusAccepted {
		t.Fatalf("a quick receiver: %d %v", code, err)
	}
}
