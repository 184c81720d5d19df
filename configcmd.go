package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/driftback/driftback/config"
)

// configCmd implements `driftback config validate FILE...` and
// `driftback config schema`. It returns 0 when every file is valid (or the
// schema was printed) and 2 otherwise.
func configCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		configUsage(stderr)
		return exitError
	}
	switch args[0] {
	case "validate":
		if len(args) < 2 {
			fmt.Fprintln(stderr, "driftback config validate: name the config file to check")
			configUsage(stderr)
			return exitError
		}
		code := exitInSync
		for _, file := range args[1:] {
			if !validateConfigFile(file, stdout, stderr) {
				code = exitError
			}
		}
		return code
	case "schema":
		if len(args) > 1 {
			fmt.Fprintln(stderr, "driftback config schema: takes no arguments")
			return exitError
		}
		if _, err := stdout.Write(config.Schema()); err != nil {
			fmt.Fprintln(stderr, "driftback config schema:", err)
			return exitError
		}
		return exitInSync
	case "help", "-h", "--help":
		configUsage(stdout)
		return exitInSync
	default:
		fmt.Fprintf(stderr, "driftback config: unknown subcommand %q\n", args[0])
		configUsage(stderr)
		return exitError
	}
}

// validateConfigFile reports on one file: "FILE: ok (N targets)" on stdout,
// or each error on its own line on stderr.
func validateConfigFile(file string, stdout, stderr io.Writer) bool {
	cfg, err := config.Load(file)
	if err != nil {
		var errs config.Errors
		if errors.As(err, &errs) {
			for _, e := range errs {
				fmt.Fprintln(stderr, e)
			}
		} else {
			fmt.Fprintln(stderr, "driftback config validate:", err)
		}
		return false
	}
	noun := "targets"
	if len(cfg.Targets) == 1 {
		noun = "target"
	}
	fmt.Fprintf(stdout, "%s: ok (%d %s)\n", file, len(cfg.Targets), noun)
	return true
}

func configUsage(w io.Writer) {
	fmt.Fprint(w, `usage: driftback config <subcommand>

subcommands:
  validate FILE...  check config files; prints "FILE: ok (N targets)" or every error as FILE:LINE:COLUMN: FIELD: MESSAGE (exit 2)
  schema            print the JSON Schema of the config file
`)
}
