package commands

import (
	"errors"
	"fmt"
	"io"
	"strings"

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
FILE:LINE:COLUMN: FIELD: MESSAGE on standard error (exit 2). Where clusters discover targets,
the line says what each looks for, besides the N targets written in the file.
- reads standard input, which these lines call <stdin>.`,
		Example: `  driftback config validate driftback.yaml
  kubectl get configmap driftback-config -n driftback -o jsonpath='{.data.config\.yaml}' | driftback config validate -`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			stdins := 0
			for _, f := range files {
				if f == stdinArg {
					stdins++
				}
			}
			if stdins > 1 {
				return &usageError{cmd: cmd, err: errors.New("- names standard input, which can be read once; give it once")}
			}
			ok := true
			for _, file := range files {
				if !validateConfigFile(file, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()) {
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

// stdinArg is the file argument that stands for standard input, and
// stdinName what config validate calls it.
const (
	stdinArg  = "-"
	stdinName = "<stdin>"
)

// validateConfigFile reports on one file (standard input for "-"):
// "FILE: ok (what it watches)" on stdout, or each error on its own line
// on stderr.
func validateConfigFile(file string, stdin io.Reader, stdout, stderr io.Writer) bool {
	var cfg *config.Config
	var err error
	if file == stdinArg {
		file = stdinName
		cfg, err = config.Read(file, stdin)
	} else {
		cfg, err = config.Load(file)
	}
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
	fmt.Fprintf(stdout, "%s: ok (%s)\n", file, watches(cfg))
	return true
}

// watches says what a valid config has driftback watch: its targets and,
// for each cluster that discovers more, what the cluster looks for. Which
// objects are there is known only in the cluster, so a discovery-only
// config must not read as "0 targets", nothing watched.
func watches(cfg *config.Config) string {
	noun := "targets"
	if len(cfg.Targets) == 1 {
		noun = "target"
	}
	var found []string
	for _, c := range cfg.Clusters {
		if c.Discover != nil {
			found = append(found, "cluster "+c.Name+" discovers "+discovers(c.Discover, cfg.GitHub.Owner))
		}
	}
	if len(found) == 0 {
		return fmt.Sprintf("%d %s", len(cfg.Targets), noun)
	}
	return fmt.Sprintf("%d written %s; %s", len(cfg.Targets), noun, strings.Join(found, "; "))
}

// discovers is what a cluster's discover: makes targets of, in words:
// "the Flux Kustomizations in namespace flux-system whose repository
// belongs to acme".
func discovers(ds *config.Discover, owner string) string {
	var kinds []string
	if ds.Flux {
		kinds = append(kinds, "Flux Kustomizations")
	}
	if ds.ArgoCD {
		kinds = append(kinds, "Argo CD Applications")
	}
	s := "the " + wordList(kinds, "and")
	switch len(ds.Namespaces) {
	case 0:
		s += " in every namespace"
	case 1:
		s += " in namespace " + ds.Namespaces[0]
	default:
		s += " in namespaces " + wordList(ds.Namespaces, "and")
	}
	if len(ds.Names) > 0 {
		s += " named " + orList(ds.Names)
	}
	if ds.Selector != "" {
		s += " labelled " + ds.Selector
	}
	return s + " whose repository belongs to " + owner
}
