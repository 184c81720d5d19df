package commands

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newVersionCmd is `driftback version`.
func newVersionCmd(bin Binary) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if _, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine(bin)); err != nil {
				return fail(err)
			}
			return nil
		},
	}
}

// versionLine is what `version` and `--version` print: the version, commit
// and build date set at build time.
func versionLine(bin Binary) string {
	return fmt.Sprintf("driftback %s (commit %s, built %s)", bin.Version, bin.Commit, bin.Date)
}
