// Package commands is the driftback command line: one file per command
// (plan, run, demo, config, app, version), helpers that serve one command
// in files named after it (plan_checkout.go, run_service.go, ...), and in
// root.go the command tree, the exit codes and the logging flags they all
// share.
//
// It is the top of the import rule: it may import bot, analyzer, cluster,
// config, deploy and internal/ (the demo alone uses internal/githubtest, the
// in-process GitHub); only the module's main package imports it.
package commands
