package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/repofs"
)

// planCmd is `driftback plan`: a dry run on a local checkout.
func planCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	repoDir := fs.String("repo", ".", "a local checkout of the repository")
	root := fs.String("root", "", "the kustomize root (or plain folder of manifests), relative to --repo")
	liveFile := fs.String("live", "", "live objects: multi-document YAML or a List, as `kubectl get -o yaml` prints")
	kubeconfig := fs.String("kubeconfig", "", "read live objects from this cluster instead of --live")
	kubeContext := fs.String("context", "", "the kubeconfig context (default: its current context)")
	namespaces := fs.String("namespace", "", "with --kubeconfig: the namespaces to read, comma-separated")
	format := fs.String("o", "text", "output format: text, json, markdown or patch")
	write := fs.Bool("write", false, "apply the planned files to the checkout")
	scope := fs.String("write-scope", "", "the folder the plan may write, relative to --repo (default: the whole repository);\nwith an overlay here, values its bases supply are authored as new images:/replicas: entries in it")
	if err := fs.Parse(args); err != nil {
		return exitError
	}
	fail := func(err error) int {
		fmt.Fprintln(stderr, "driftback plan:", err)
		return exitError
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if *root == "" {
		return fail(errors.New("--root is required"))
	}
	if (*liveFile == "") == (*kubeconfig == "") {
		return fail(errors.New("--live is required (or --kubeconfig and --namespace to read a cluster)"))
	}
	if *kubeconfig != "" && *namespaces == "" {
		return fail(errors.New("--kubeconfig needs --namespace"))
	}
	switch *format {
	case "text", "json", "markdown", "patch":
	default:
		return fail(fmt.Errorf("-o %q: use text, json, markdown or patch", *format))
	}
	repo, err := repofs.LoadDir(*repoDir, 0)
	if err != nil {
		return fail(err)
	}
	read, source, err := readLive(*liveFile, *kubeconfig, *kubeContext, *namespaces)
	if err != nil {
		return fail(err)
	}
	live, err := cluster.LiveObjects(read.Objects, cluster.DefaultRules())
	if err != nil {
		return fail(fmt.Errorf("%s: %w", source, err))
	}
	plan, err := analyzer.Analyze(analyzer.Input{Repo: repo, Root: *root, Live: live,
		Options: analyzer.Options{WriteScope: *scope, Coverage: read.Coverage}})
	if err != nil {
		return fail(err)
	}
	if err := printPlan(stdout, plan, *format, repo); err != nil {
		return fail(err)
	}
	if len(plan.Unread) > 0 {
		// No verdict: an empty snapshot or namespace is not "in sync".
		return fail(fmt.Errorf("%s does not hold %d object(s) the root renders, or of their kinds; nothing was written", source, len(plan.Unread)))
	}
	if *write {
		if err := writeFiles(*repoDir, plan.Files); err != nil {
			return fail(err)
		}
	}
	if plan.InSync() {
		return exitInSync
	}
	return exitDrift
}

// readLive reads the snapshot file, or lists the namespaces of a cluster.
func readLive(file, kubeconfig, kubeContext, namespaces string) (cluster.Listing, string, error) {
	if file != "" {
		objs, err := cluster.ReadSnapshot(file)
		return cluster.Listing{Objects: objs}, file, err
	}
	cfg, err := cluster.RESTConfig(kubeconfig, kubeContext)
	if err != nil {
		return cluster.Listing{}, kubeconfig, err
	}
	cfg.Timeout = 30 * time.Second
	lister, err := cluster.NewClientLister(cfg)
	if err != nil {
		return cluster.Listing{}, kubeconfig, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var ns []string
	for _, n := range strings.Split(namespaces, ",") {
		if n = strings.TrimSpace(n); n != "" {
			ns = append(ns, n)
		}
	}
	read, err := lister.List(ctx, cluster.Scope{Namespaces: ns})
	if err != nil {
		return cluster.Listing{}, kubeconfig, fmt.Errorf("%s: %w", cfg.Host, err)
	}
	return read, kubeconfig, nil
}

func printPlan(w io.Writer, plan *analyzer.Plan, format string, repo *repofs.Repo) error {
	var s string
	switch format {
	case "json":
		b, err := json.MarshalIndent(plan, "", "  ")
		if err != nil {
			return err
		}
		s = string(b) + "\n"
	case "markdown":
		s = report.Markdown(plan, report.MarkdownOptions{})
	case "patch":
		s = report.Patch(plan, repo.File)
	default:
		s = report.Text(plan)
	}
	if s != "" && !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	_, err := io.WriteString(w, s)
	return err
}

// writeFiles applies the plan to the checkout all or nothing: every file is
// first written beside its target, and only when all are written are they
// renamed into place.
func writeFiles(dir string, files []analyzer.File) error {
	type staged struct{ tmp, dst string }
	var done []staged
	cleanup := func() {
		for _, s := range done {
			os.Remove(s.tmp)
		}
	}
	for _, f := range files {
		rel, err := repofs.Clean(f.Path)
		if err != nil || rel == "" {
			cleanup()
			return fmt.Errorf("refusing to write %q: %v", f.Path, err)
		}
		dst := filepath.Join(dir, filepath.FromSlash(rel))
		if f.Deleted {
			done = append(done, staged{dst: dst})
			continue
		}
		if info, err := os.Lstat(dst); err == nil && info.Mode()&os.ModeSymlink != 0 {
			cleanup()
			return fmt.Errorf("refusing to write through the symlink %s", f.Path)
		}
		mode := os.FileMode(0o644)
		if info, err := os.Stat(dst); err == nil {
			mode = info.Mode().Perm()
		}
		tmp, err := os.CreateTemp(filepath.Dir(dst), ".driftback-*")
		if err != nil {
			cleanup()
			return err
		}
		done = append(done, staged{tmp: tmp.Name(), dst: dst})
		_, werr := tmp.WriteString(f.Content)
		cerr := tmp.Close()
		if werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = os.Chmod(tmp.Name(), mode)
		}
		if werr != nil {
			cleanup()
			return fmt.Errorf("write %s: %w", f.Path, werr)
		}
	}
	for _, s := range done {
		var err error
		if s.tmp == "" {
			err = os.Remove(s.dst)
		} else {
			err = os.Rename(s.tmp, s.dst)
		}
		if err != nil {
			return fmt.Errorf("apply %s: %w", s.dst, err)
		}
	}
	return nil
}
