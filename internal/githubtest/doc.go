// Package githubtest is an in-process server that speaks the part of GitHub's
// REST API a GitHub App bot uses, backed by real git objects, with GitHub App
// authentication, conditional requests, rate-limit headers and fault
// injection. Every request and response is checked against GitHub's published
// OpenAPI description, so a test that passes here talks to GitHub the way
// GitHub documents. It serves tests and `driftback demo`. Its repositories
// can also be cloned and fetched over git's smart HTTP protocol at
// URL()+"/{owner}/{repo}.git" (smarthttp.go), so a GitOps tool can follow
// the same branches the bot writes.
//
// The answers have the shapes GitHub sends: the encoders (the ...JSON
// methods, next to the handlers of their area) fill in every field the
// description marks required.
//
// Imports are kept to the standard library, go-git (the object store),
// the OpenAPI description with kin-openapi to check traffic against it, and
// golang-jwt to verify app JWTs. No driftback package above internal/ (bot,
// analyzer, cluster, ...) may be imported: a fake that shared code with the
// client it checks would agree with that client's mistakes.
//
// `driftback demo` links the package into the product binary, so it must not
// import testing or net/http/httptest either (deps_test.go at the module root
// fails if it does); tests hand their *testing.T over as a TB.
package githubtest
