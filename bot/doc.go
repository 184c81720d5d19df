// Package bot is the GitHub App: it keeps one pull request per target with
// the analyzer's plan, and check runs that say whether the cluster matches
// Git. All state lives in GitHub (a hidden block in the PR body); the
// process holds caches only.
//
// The root only sequences. A poll (poll.go, reconcile.go) reads GitHub
// (bot/ghround) and the cluster, asks bot/idle whether anything moved,
// plans (bot/targetplan), then hands the plan to the rooms that write:
// bot/pullrequest (the branch through bot/commit, the body through
// bot/prbody), bot/checks, bot/stall; what the poll knows travels between
// them in a bot/pollstate.Poll. The runner (runner.go, round.go, reads.go,
// wake.go) decides what to poll when, wakes targets on webhook deliveries
// (bot/webhook) and keeps the drift dashboards (bot/dashboard). The HTTP
// client is bot/githubapi, the sharing of targets among replicas
// bot/shard. Each room imports only rooms on lower floors
// (architecture_test.go's botRank).
//
// It may import its sub-packages, analyzer (and analyzer/report), cluster,
// config and the internal/ base libraries; only the commands import it.
package bot
