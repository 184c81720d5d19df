// Package installtest walks the installation guide the way a new user
// does: it reads the fenced blocks of a Markdown page, runs step 1's
// `driftback app create` against a test GitHub's manifest flow and the
// shell commands of the later steps against a test kube-apiserver, on the
// files those steps write, sets up the repository and GitOps objects the
// guide assumes, and starts driftback as the installed Deployment would
// run it (its arguments, environment, mounted ConfigMap and Secret, and
// its ServiceAccount's token), until its first check runs. A doc edit
// that breaks a step fails the test that walks it.
package installtest
