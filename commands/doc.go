// Package commands is the driftback command line: one file per command
// (plan, run, demo, config, app, version), helpers that serve one command
// in files named after it (plan_checkout.go, run_service.go, ...), and in
// root.go the command tree, the exit codes and the logging flags they all
// share.
//
// It is the top of the import rule: it may import bot, analyzer, cluster,
// config and internal/ (of the test servers, only the demo's in-process
// GitHub, internal/githubtest); only the module's main package imports it.
package commands
