package commands

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/bot/discover"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/githubtest"
)

// A discovered-target demo: the example repository, its live snapshot (the
// revision the tool applied written APPLIED), and its config file, with no
// targets: its one cluster discovers them.
type discoveredDemo struct {
	tool, repo, example, live, config string
	applied                           []byte // what stands for the applied commit in live
}

var (
	fluxDemo = discoveredDemo{tool: "Flux", repo: "fleet", example: "examples/fleet", live: "examples/fleet-live.yaml",
		config: "examples/fleet-driftback.yaml", applied: []byte("main@sha1:APPLIED")}
	argoDemo = discoveredDemo{tool: "Argo CD", repo: "shop-deploy", example: "examples/argocd", live: "examples/argocd-live.yaml",
		config: "examples/argocd-driftback.yaml", applied: []byte("APPLIED")}
)

// demoDiscovered is `driftback demo --flux` and `--argocd`: the target is
// discovered from the object file's Flux Kustomization or Argo CD
// Application and reconciled like any other.
func demoDiscovered(cmd *cobra.Command, examples fs.FS, dd discoveredDemo) error {
	srv, b, err := demoGitHub(cmd.Context(), githubtest.Options{})
	if err != nil {
		return fail(err)
	}
	defer srv.Close()
	files, err := exampleRepo(examples, dd.example)
	if err != nil {
		return fail(err)
	}
	baseSHA := srv.CreateRepo("acme", dd.repo, "main", files)
	raw, err := fs.ReadFile(examples, dd.live)
	if err != nil {
		return fail(err)
	}
	// The tool has applied the commit the repository was just made with.
	liveFile, err := writeTemp(bytes.ReplaceAll(raw, dd.applied, bytes.Replace(dd.applied, []byte("APPLIED"), []byte(baseSHA), 1)))
	if err != nil {
		return fail(err)
	}
	defer os.Remove(liveFile)
	objs, err := cluster.ReadObjectFile(liveFile)
	if err != nil {
		return fail(err)
	}
	text, err := fs.ReadFile(examples, dd.config)
	if err != nil {
		return fail(err)
	}
	cfg, err := config.Parse(dd.config, text)
	if err != nil {
		return fail(err)
	}
	ds := cfg.Clusters[0].Discover
	found, err := cluster.DiscoverIn(objs, discoverFilter(ds))
	if err != nil {
		return fail(err)
	}
	d := discover.Targets(cfg, "prod", "github.com", found)
	if len(d.Targets) != 1 {
		return fail(fmt.Errorf("the %s example should discover one target, found %d (%v)", dd.tool, len(d.Targets), d.Skipped))
	}
	dt := d.Targets[0]
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "Discovered target %s: %s, root %s, %d objects in its inventory\n", dt.Config.Name, dt.Config.Repo, dt.Config.Root, len(dt.Inventory))
	src := cluster.Source{Flux: dt.Config.AppliedRevision.Flux, ArgoCD: dt.Config.AppliedRevision.ArgoCD}
	target := &bot.Target{Config: dt.Config, Lister: cluster.ObjectFileLister{Path: liveFile}, ByInventory: true,
		Applied: func(ctx context.Context) (cluster.Applied, error) { return cluster.AppliedIn(objs, src) }}
	out, err := b.Reconcile(cmd.Context(), target)
	if err != nil {
		return fail(err)
	}
	if err := offSpec(srv); err != nil {
		return fail(err)
	}
	printDemo(w, srv, dd.repo, dt.Config.Branch(), out, baseSHA, files)
	return nil
}
