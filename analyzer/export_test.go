package analyzer

import "github.com/driftback/driftback/internal/jsonvalue"

// AnalyzeForcingDye is Analyze with the dyed build run whether or not
// dyeCanRoute thinks it can route anything, for tests outside the package.
func AnalyzeForcingDye(in Input) (*Plan, error) { return analyze(in, true) }

// IntentMatchesView reports what intentMatches says of a live object and
// its render, and what comparing the built intent view with it says.
func IntentMatchesView(live, ren map[string]any, own Ownership) (fast, built bool) {
	return intentMatches(live, ren, own), jsonvalue.Equal(intentView(live, ren, own), ren)
}
