package main

import (
	"strings"
	"testing"

	"github.com/driftback/driftback/analyzer"
)

// README's list of what a plan's `route` may be names every route the
// analyzer writes (analyzer.Routes; issue 55, item 8: it had left out
// substitute).
func TestReadmeNamesEveryRoute(t *testing.T) {
	list, ok := pageSays(t, "README.md", "`route` is", " #")
	if !ok {
		return
	}
	for _, r := range analyzer.Routes {
		if !strings.Contains(list, "`"+r+"`") {
			t.Errorf("README's list of routes (%q) leaves out `%s`", list, r)
		}
	}
}
