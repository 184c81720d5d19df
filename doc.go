// Command driftback keeps Git the truth for clusters run with GitOps: it
// finds what changed in the cluster, works out which source file produced
// each drifted field, and proposes the change back as a pull request.
//
// The commands (run, plan, demo, config, version) are the top of the
// import rule: they may import bot, analyzer, cluster, config and
// internal/; nothing imports them. docs/ARCHITECTURE.md has the map.
package main
