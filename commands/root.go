package commands

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
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

// Exit codes follow kubectl diff: 0 in sync, 1 drift found, 2 an error.
const (
	exitInSync = 0
	exitDrift  = 1
	exitError  = 2
)

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

Exit codes, as kubectl diff: 0 in sync, 1 drift found, 2 an error.`,
		Version:       b.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate(b.line() + "\n")
	addLogFlags(root)
	root.AddCommand(newDemoCmd(bin.Examples), newRunCmd(), newPlanCmd(), newConfigCmd(), newAppCmd(bin.AppManifest), newVersionCmd(b))
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

// addLogFlags gives every command the same logging flags.
func addLogFlags(root *cobra.Command) {
	root.PersistentFlags().String("log-format", "json", "log format: json (one object a line, for log collectors) or text")
	root.PersistentFlags().String("log-level", "info", "least severe level logged: debug, info, warn or error")
}

// newLogger builds the logger the flags ask for, writing to w.
func newLogger(cmd *cobra.Command, w io.Writer) (*slog.Logger, error) {
	format, _ := cmd.Flags().GetString("log-format")
	level, _ := cmd.Flags().GetString("log-level")
	var lv slog.Level
	switch strings.ToLower(level) {
	case "debug":
		lv = slog.LevelDebug
	case "info":
		lv = slog.LevelInfo
	case "warn", "warning":
		lv = slog.LevelWarn
	case "error":
		lv = slog.LevelError
	default:
		return nil, fmt.Errorf("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: use json or text", format)
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
	default:
		return src, false
	}
	return src, true
}
