// Package bot is the GitHub App: it keeps one pull request per target with
// the analyzer's plan, and check runs that say whether the cluster matches
// Git. All state lives in GitHub (a hidden block in the PR body); the
// process holds caches only. The HTTP client it talks to GitHub through is
// in bot/githubapi, the sharing of targets among replicas in bot/shard.
//
// It may import its sub-packages, analyzer (and analyzer/report), cluster,
// config and the internal/ base libraries; only the commands import it.
package bot
