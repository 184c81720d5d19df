// Command driftback keeps Git the truth for clusters run with GitOps: it
// finds what changed in the cluster, works out which source file produced
// each drifted field, and proposes the change back as a pull request.
//
// This package is main alone: it embeds the bundled examples and app.yaml,
// which sit beside it, takes the version stamped in at build time, and runs
// the commands (package commands: run, plan, demo, config, app, version).
// With commands it is the top of the import rule; nothing imports it.
// docs/ARCHITECTURE.md has the map.
package main
