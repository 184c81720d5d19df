package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/internal/repofs"
)

// externalDiff is the diff program a -o patch user chose, read as kubectl
// reads KUBECTL_EXTERNAL_DIFF: a command and its arguments split at
// spaces, run without a shell. DRIFTBACK_EXTERNAL_DIFF comes first, so a
// user can set one for driftback alone.
func externalDiff() []string {
	for _, env := range []string{"DRIFTBACK_EXTERNAL_DIFF", "KUBECTL_EXTERNAL_DIFF"} {
		if argv := strings.Fields(os.Getenv(env)); len(argv) > 0 {
			return argv
		}
	}
	return nil
}

// diffInput is what runExternalDiff shows and where its output goes.
type diffInput struct {
	plan           *analyzer.Plan
	old            func(path string) ([]byte, bool) // the files before the plan
	stdout, stderr io.Writer
}

// runExternalDiff writes every file the plan changes into two folders, as
// it is (GIT) and as planned (PLANNED), and runs the diff program with the
// two folders as its last arguments, as kubectl diff does with LIVE and
// MERGED. Exit status 1 means "the folders differ", not failure.
func runExternalDiff(ctx context.Context, argv []string, in diffInput) error {
	dir, err := os.MkdirTemp("", "driftback-diff-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	from, to := filepath.Join(dir, "GIT"), filepath.Join(dir, "PLANNED")
	for _, d := range []string{from, to} {
		if err := os.Mkdir(d, 0o700); err != nil {
			return err
		}
	}
	put := func(base, rel string, data []byte) error {
		p := filepath.Join(base, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return err
		}
		return os.WriteFile(p, data, 0o600)
	}
	for _, f := range in.plan.Files {
		rel, err := repofs.Clean(f.Path)
		if err != nil || rel == "" {
			return fmt.Errorf("refusing to diff %q: %v", f.Path, err)
		}
		if b, ok := in.old(rel); ok {
			if err := put(from, rel, b); err != nil {
				return err
			}
		}
		if !f.Deleted {
			if err := put(to, rel, []byte(f.Content)); err != nil {
				return err
			}
		}
	}
	cmd := exec.CommandContext(ctx, argv[0], append(argv[1:], from, to)...)
	cmd.Stdout, cmd.Stderr = in.stdout, in.stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 1 {
		return nil
	}
	if err != nil {
		return fmt.Errorf("external diff %s: %w", argv[0], err)
	}
	return nil
}
