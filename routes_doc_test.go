package main

import (
	"os"
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer"
)

// README's list of what a plan's `route` may be names every route the
// analyzer writes (analyzer.Routes; issue 55, item 8: it had left out
// substitute).
func TestReadmeNamesEveryRoute(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	const lead = "`route` is"
	_, rest, ok := strings.Cut(strings.Join(strings.Fields(string(b)), " "), lead)
	if !ok {
		t.Fatalf("README no longer says %q; update this test", lead)
	}
	list, _, _ := strings.Cut(rest, " #")
	for _, r := range analyzer.Routes {
		if !strings.Contains(list, "`"+r+"`") {
			t.Errorf("README's list of routes (%q) leaves out `%s`", list, r)
		}
	}
}
