// Package targetplan owns planning one target: the render at the revision
// its GitOps tool applied, the analyzer's plan against the live objects,
// the tool's part (bot/enforce) and the edits a reviewer declined. The bot
// fills its Input from GitHub and the cluster, `driftback plan --config`
// from a checkout, so the dry run is the bot's plan.
//
// Of bot/, it imports only `bot/enforce` and `bot/githubapi` (lower floors:
// architecture_test.go). Beyond bot/: `analyzer`, `analyzer/report`,
// `cluster`, `config`, `internal/kube` and `internal/repofs`.
package targetplan
