package main

import (
	"fmt"
	"io"
	"os"
)

// Set at build time (tools/image builds with -ldflags "-X main.version=v1.2.3
// -X main.commit=SHA -X main.date=RFC3339"); a plain go build keeps these.
var (
	version = "dev"
	commit  = "unknown"
	date    = "unknown"
)

// Exit codes follow kubectl diff: 0 in sync, 1 drift found, 2 an error.
const (
	exitInSync = 0
	exitDrift  = 1
	exitError  = 2
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitError
	}
	switch args[0] {
	case "plan":
		return planCmd(args[1:], stdout, stderr)
	case "run":
		return runCmd(args[1:], stdout, stderr)
	case "demo":
		return demoCmd(args[1:], stdout, stderr)
	case "config":
		return configCmd(args[1:], stdout, stderr)
	case "version":
		fmt.Fprintf(stdout, "driftback %s (commit %s, built %s)\n", version, commit, date)
		return exitInSync
	case "help", "-h", "--help":
		usage(stdout)
		return exitInSync
	default:
		fmt.Fprintf(stderr, "driftback: unknown command %q\n", args[0])
		usage(stderr)
		return exitError
	}
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage: driftback <command> [flags]

commands:
  demo      one complete reconcile on the bundled example, with an in-process GitHub
  run       the GitHub App: poll the configured targets (run --config FILE)
  plan      compare a kustomize root with live objects and print the plan
  config    validate a config file (config validate FILE) or print its JSON Schema
  version   print the version
`)
}
