package main

import (
	"fmt"
	"io"
	"os"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

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
	case "app":
		return appCmd(args[1:], stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "driftback", version)
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
  app       create the GitHub App from app.yaml (app create [--org ORG]) and write its id and key Secret
  version   print the version
`)
}
