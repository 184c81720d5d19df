package commands

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/driftback/driftback/bot"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/githubtest"
)

// The Flux demo's config: no targets, the cluster discovers them.
const demoFluxConfig = `github:
  appID: 1
  privateKeyEnv: DRIFTBACK_DEMO_KEY
  owner: acme
clusters:
- name: prod
  inCluster: true
  discover:
    flux: true
    namespaces: [flux-system]
defaults:
  pullRequest:
    labels: [drift]
`

// demoFlux is `driftback demo --flux`: the target is discovered from the
// object file's Flux Kustomization and reconciled like any other.
func demoFlux(cmd *cobra.Command, examples fs.FS) error {
	srv, b, err := demoGitHub(cmd.Context(), githubtest.Options{})
	if err != nil {
		return fail(err)
	}
	defer srv.Close()
	files, err := exampleRepo(examples, "examples/fleet")
	if err != nil {
		return fail(err)
	}
	baseSHA := srv.CreateRepo("acme", "fleet", "main", files)
	raw, err := fs.ReadFile(examples, "examples/fleet-live.yaml")
	if err != nil {
		return fail(err)
	}
	// Flux has applied the commit the repository was just made with.
	liveFile, err := writeTemp(bytes.ReplaceAll(raw, []byte("main@sha1:APPLIED"), []byte("main@sha1:"+baseSHA)))
	if err != nil {
		return fail(err)
	}
	defer os.Remove(liveFile)
	objs, err := cluster.ReadObjectFile(liveFile)
	if err != nil {
		return fail(err)
	}
	cfg, err := config.Parse("demo.yaml", []byte(demoFluxConfig))
	if err != nil {
		return fail(err)
	}
	ds := cfg.Clusters[0].Discover
	found, err := cluster.DiscoverIn(objs, cluster.DiscoverFilter{Flux: ds.Flux, ArgoCD: ds.ArgoCD, Namespaces: ds.Namespaces, Selector: ds.Selector, Names: ds.Names})
	if err != nil {
		return fail(err)
	}
	d := bot.DiscoverTargets(cfg, "prod", "github.com", found)
	if len(d.Targets) != 1 {
		return fail(fmt.Errorf("the Flux example should discover one target, found %d (%v)", len(d.Targets), d.Skipped))
	}
	dt := d.Targets[0]
	w := cmd.OutOrStdout()
	fmt.Fprintf(w, "Discovered target %s: %s, root %s, %d objects in its inventory\n", dt.Config.Name, dt.Config.Repo, dt.Config.Root, len(dt.Inventory))
	src := cluster.Source{Flux: dt.Config.AppliedRevision.Flux}
	target := &bot.Target{Config: dt.Config, Lister: cluster.ObjectFileLister{Path: liveFile}, ByInventory: true,
		Applied: func(ctx context.Context) (cluster.Applied, error) { return cluster.AppliedIn(objs, src) }}
	out, err := b.Reconcile(cmd.Context(), target)
	if err != nil {
		return fail(err)
	}
	if failures := srv.Failures(); len(failures) > 0 {
		return fail(fmt.Errorf("the GitHub test server saw %d request(s) or response(s) outside GitHub's OpenAPI description; first: %+v", len(failures), failures[0]))
	}
	printDemo(w, srv, "fleet", dt.Config.Branch(), out, baseSHA, files)
	return nil
}
