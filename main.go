package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
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
	os.Exit(execute(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// exitStatus carries a command's exit code out of cobra, which knows only
// error or no error. err, when set, is printed as one line.
type exitStatus struct {
	code int
	err  error
}

func (e *exitStatus) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitStatus) Unwrap() error { return e.err }

// fail is the error of a command that could not do its job: exit 2.
func fail(err error) error { return &exitStatus{code: exitError, err: err} }

// errDrift ends a command that worked and found drift: exit 1, no message.
var errDrift = &exitStatus{code: exitDrift}

// newRootCmd builds the command tree. A new command is a newXCmd function
// in its own file, added here.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "driftback",
		Short: "Propose what drifted in a Kubernetes cluster back to Git, into the kustomize source that produced it",
		Long: `driftback compares what runs in a cluster with what a kustomize root renders, works out which
source file produced each drifted field, and proposes the change back to Git as one pull
request per target (run), or prints it (plan).

Exit codes, as kubectl diff: 0 in sync, 1 drift found, 2 an error.`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate(versionLine() + "\n")
	addLogFlags(root)
	root.AddCommand(newDemoCmd(), newRunCmd(), newPlanCmd(), newConfigCmd(), newAppCmd(), newVersionCmd())
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{cmd: c, err: err}
	})
	return root
}

// usageError is a command line cobra could not parse: the message is
// followed by where to find the usage.
type usageError struct {
	cmd *cobra.Command
	err error
}

func (e *usageError) Error() string { return e.err.Error() }

// execute runs one command line and returns the process's exit code.
func execute(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteC()
	if err == nil {
		return exitInSync
	}
	var st *exitStatus
	if errors.As(err, &st) {
		if st.err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", cmd.CommandPath(), st.err)
		}
		return st.code
	}
	// cobra's own: an unknown command or flag, a wrong number of arguments.
	var ue *usageError
	if errors.As(err, &ue) {
		cmd = ue.cmd
	}
	fmt.Fprintf(stderr, "%s: %v\nRun '%s --help' for usage.\n", cmd.CommandPath(), err, cmd.CommandPath())
	return exitError
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine())
			return err
		},
	}
}

// versionLine is what `version` and `--version` print: the version, commit
// and build date set at build time.
func versionLine() string {
	return fmt.Sprintf("driftback %s (commit %s, built %s)", version, commit, date)
}
