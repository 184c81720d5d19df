// Package attribution owns who changed each drifted field: the field
// managers of the live object, how and when they wrote, and the user the
// cluster's audit trail names. A poll builds one from what it listed; the
// pull request, its commit, the check run and the dashboard read it.
//
// It imports no other package of bot/. Beyond bot/: `analyzer`,
// `analyzer/report` and `cluster`.
package attribution
