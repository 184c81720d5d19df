// Package app owns who this installation of the GitHub App is when it
// writes: its client, its App id and bot login (which tell its own check
// runs and commits from anyone else's), and its instance (config
// `instance`, default "default"), stamped on everything it writes: the
// pull request's hidden state, the commit's Driftback-Instance trailer,
// the check run's external_id and, for any but the default, the check
// run's name. The default instance stamps nothing, which is how earlier
// versions wrote, so what they left stays its own. A pull request is the
// installation's own only when its bot opened it and its state names the
// instance (HolderOf), and not another deployment of it lately (two
// clusters of one App at one instance: OtherDeploymentHolds); an
// installation never closes, pushes to or deletes what anyone else wrote
// (DESIGN §11).
//
// Place is where one poll of a target writes.
//
// Of bot/, it imports only `bot/metrics` and `bot/prbody` (lower floors:
// architecture_test.go). Beyond bot/: `config`.
package app
