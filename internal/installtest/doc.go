// Package installtest walks the installation guide the way a new user
// does: it reads the fenced blocks of a Markdown page, runs the shell
// commands they hold against a test kube-apiserver, sets up the GitHub
// App, repository and GitOps objects the guide assumes, and starts
// driftback as the installed Deployment would run it (its arguments,
// environment, mounted ConfigMap and Secret, and its ServiceAccount's
// token), until its first check runs. A doc edit that breaks a step fails
// the test that walks it.
package installtest
