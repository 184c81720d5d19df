package commands

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
)

// Binary is what main knows and this package cannot: the version stamped
// in at build time ("dev" and "unknown", or empty, where nothing was: the
// Go toolchain's build info fills those in), and the files embedded from
// the module root (go:embed reaches no file above the embedding package's
// folder).
type Binary struct {
	Version, Commit, Date string
	// Examples holds the bundled examples under "examples/" (the demo's
	// repositories and object files).
	Examples fs.FS
	// AppManifest is app.yaml, the App `app create` registers.
	AppManifest []byte
}

// Execute runs one command line and returns the process's exit code.
func Execute(bin Binary, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return execute(bin, args, stdin, stdout, stderr)
}

// Exit codes follow kubectl diff and terraform plan -detailed-exitcode,
// for every command: 0 nothing to do, 1 drift found, 2 an error.
// exitCodesHelp says so in --help; README.md holds the same table.
const (
	exitInSync = 0
	exitDrift  = 1
	exitError  = 2
)

const exitCodesHelp = `Exit codes, for every command, as kubectl diff and terraform plan -detailed-exitcode:
  0  nothing to do: plan found the cluster in sync; any other command did its job
  1  drift found: plan has edits or refusals (only plan exits 1)
  2  an error: a command line that does not parse, input that cannot be read or built,
     live objects missing for what the root renders (no verdict), a failed poll of run --once`

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
func newRootCmd(bin Binary) *cobra.Command {
	b := runningBuild(bin)
	root := &cobra.Command{
		Use:   "driftback",
		Short: "Propose what drifted in a Kubernetes cluster back to Git, into the kustomize source that produced it",
		Long: `driftback compares what runs in a cluster with what a kustomize root renders, works out which
source file produced each drifted field, and proposes the change back to Git as one pull
request per target (run), or prints it (plan).

` + exitCodesHelp,
		Version:       b.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate(b.line() + "\n")
	addLogFlags(root)
	root.AddCommand(newDemoCmd(bin.Examples), newRunCmd(), newPlanCmd(), newTargetsCmd(), newConfigCmd(), newAppCmd(bin.AppManifest), newVersionCmd(b))
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{cmd: c, err: err}
	})
	strictCommandLines(root)
	return root
}

// strictCommandLines makes a command line that names no command an error
// (exit 2), not the help (exit 0): help nope, completion nope.
func strictCommandLines(root *cobra.Command) {
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch {
		case c.Name() == "help":
			strictHelp(c)
		case c.HasSubCommands() && !c.Runnable():
			c.Args = cobra.NoArgs
			c.RunE = func(c *cobra.Command, _ []string) error { return c.Help() }
		}
	}
}

// strictHelp makes help refuse a topic that is no command; cobra's own
// prints the usage and exits 0.
func strictHelp(help *cobra.Command) {
	show := help.Run
	help.Run = nil
	help.RunE = func(c *cobra.Command, args []string) error {
		if cmd, rest, err := c.Root().Find(args); err != nil || cmd == nil || len(rest) > 0 {
			return &usageError{cmd: c.Root(), err: fmt.Errorf("no help topic %q: %s has no such command", strings.Join(args, " "), c.Root().Name())}
		}
		show(c, args)
		return nil
	}
}

// usageError is a command line cobra could not parse: the message is
// followed by where to find the usage.
type usageError struct {
	cmd *cobra.Command
	err error
}

func (e *usageError) Error() string { return e.err.Error() }

// execute runs one command line and returns the process's exit code.
func execute(bin Binary, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd(bin)
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

// revisionSource is the object that records a target's applied revision
// (run reads it from the cluster, plan from the cluster or a file).
func revisionSource(t *config.Target) (cluster.Source, bool) {
	var src cluster.Source
	switch ar := t.AppliedRevision; {
	case ar.Flux != nil:
		src.Flux = ar.Flux
	case ar.ArgoCD != nil:
		src.ArgoCD = ar.ArgoCD
	case ar.HelmRelease != nil:
		src.HelmRelease = ar.HelmRelease
	default:
		return src, false
	}
	return src, true
}
