package commands

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/driftback/driftback/config"
)

// newConfigCmd is `driftback config validate FILE...` and
// `driftback config schema`.
func newConfigCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Validate a config file, or print its JSON Schema",
		// A RunE, so that an unknown subcommand is an error, not the help.
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "validate FILE...",
		Short: "Check config files",
		Long: `Check config files. Prints "FILE: ok (N targets)" for each valid file, or every error as
FILE:LINE:COLUMN: FIELD: MESSAGE on standard error (exit 2).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			ok := true
			for _, file := range files {
				if !validateConfigFile(file, cmd.OutOrStdout(), cmd.ErrOrStderr()) {
					ok = false
				}
			}
			if !ok {
				return &exitStatus{code: exitError}
			}
			return nil
		},
	}, &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of the config file",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := cmd.OutOrStdout().Write(config.Schema()); err != nil {
				return fail(err)
			}
			return nil
		},
	})
	return cmd
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
