package commands

import (
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"
)

// build is what `driftback version` reports about the running binary.
type build struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	Date      string `json:"date"`
	GoVersion string `json:"goVersion"`
	// Modified: the binary was built from a working tree with changes
	// its commit does not hold (the toolchain's vcs.modified).
	Modified bool   `json:"modified"`
	Platform string `json:"platform"`
}

// versionFormats are the values of version -o.
var versionFormats = []string{"text", "json", "yaml"}

// newVersionCmd is `driftback version`. --short and --client are kubectl
// version's flags, taken so that the habit works.
func newVersionCmd(b build) *cobra.Command {
	var output string
	var short bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Long: `Print the version, commit and build date of this binary: those stamped in at build time
(tools/image.sh does), or else those the Go toolchain recorded (go build in a git clone,
go install MODULE@VERSION). -o json and -o yaml add the Go version and the platform;
--short prints the version alone. --client is taken as kubectl version takes it, and changes
nothing: driftback has no server part to ask.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if short && cmd.Flags().Changed("output") {
				return &usageError{cmd: cmd, err: errors.New("--short and -o both say what to print; give one")}
			}
			var err error
			switch {
			case short:
				_, err = fmt.Fprintln(cmd.OutOrStdout(), b.Version)
			case output == "text":
				_, err = fmt.Fprintln(cmd.OutOrStdout(), b.line())
			default:
				err = printDocument(cmd.OutOrStdout(), b, output)
			}
			if err != nil {
				return fail(err)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&short, "short", false, "print the version alone")
	cmd.Flags().Bool("client", false, "the client's version, which is all there is (as kubectl version --client)")
	addOutputFlag(cmd, &output, versionFormats)
	return cmd
}

// line is what `version` and `--version` print: the version, commit and
// build date, and "(modified)" for a build of a changed working tree.
func (b build) line() string {
	s := fmt.Sprintf("driftback %s (commit %s, built %s)", b.Version, b.Commit, b.Date)
	if b.Modified {
		s += " (modified)"
	}
	return s
}

// runningBuild is readBuild for this process.
func runningBuild(bin Binary) build {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		info = nil
	}
	return readBuild(bin, info)
}

// Placeholders main holds when no -ldflags -X set its variables.
const (
	unsetVersion = "dev"
	unsetValue   = "unknown"
)

// readBuild is what the binary knows of itself. A value stamped in with
// -ldflags (bin) wins; a missing one comes from the Go toolchain's build
// info (info, nil when there is none): the main module's version (a tag
// or pseudo-version under go install, or one derived from git since Go
// 1.24), and vcs.revision, vcs.time and vcs.modified, which go build
// records in a git clone unless -buildvcs=false (GOFLAGS may say so) or
// the folder is a git worktree. A pseudo-version supplies the commit
// prefix and time when vcs.* are absent, as they are under go install.
func readBuild(bin Binary, info *debug.BuildInfo) build {
	b := build{Version: bin.Version, Commit: bin.Commit, Date: bin.Date, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	var vcs map[string]string
	if info != nil {
		vcs = map[string]string{}
		for _, s := range info.Settings {
			vcs[s.Key] = s.Value
		}
		if info.GoVersion != "" {
			b.GoVersion = info.GoVersion
		}
		if isUnset(b.Version) && info.Main.Version != "" && info.Main.Version != "(devel)" {
			b.Version = info.Main.Version
		}
	}
	pseudoRev, pseudoTime := pseudoVersion(b.Version)
	rev := vcs["vcs.revision"]
	if isUnset(b.Commit) {
		b.Commit = firstOf(rev, pseudoRev, unsetValue)
	}
	if isUnset(b.Date) {
		b.Date = firstOf(vcs["vcs.time"], pseudoTime, unsetValue)
	}
	if isUnset(b.Version) {
		b.Version = unsetVersion
	}
	// vcs.modified speaks of vcs.revision: of no other commit stamped in.
	b.Modified = rev != "" && rev == b.Commit && vcs["vcs.modified"] == "true"
	return b
}

func isUnset(s string) bool { return s == "" || s == unsetVersion || s == unsetValue }

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// A pseudo-version (go.dev/ref/mod#pseudo-versions) ends in the commit's
// UTC time and its 12-character revision prefix, perhaps then +dirty.
var pseudo = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+-(?:.*[.-])?([0-9]{14})-([0-9a-f]{12})(?:\+[0-9A-Za-z.-]+)?$`)

// pseudoVersion is the revision prefix and RFC 3339 time a pseudo-version
// holds, or two empty strings for any other version.
func pseudoVersion(v string) (rev, date string) {
	m := pseudo.FindStringSubmatch(v)
	if m == nil {
		return "", ""
	}
	t, err := time.Parse("20060102150405", m[1])
	if err != nil {
		return "", ""
	}
	return m[2], t.UTC().Format(time.RFC3339)
}
