// Package githubapi is the bot's HTTP client for GitHub: the App's JWT and
// installation-token authentication, retries with backoff, rate-limit
// pauses, the hourly write budget, the fence before writes and the ETag
// cache of conditional requests. It knows nothing of targets or pull
// requests; the bot's App flow uses the client it returns.
//
// It may import only the standard library, go-github and its auth
// libraries: never bot or another driftback package. It also owns how a
// GitHub answer is read (errors.go: refusals, rate limits, unknown
// outcomes) and how its web and API hosts relate (hosts.go).
package githubapi
