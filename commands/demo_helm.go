package commands

import (
	"fmt"
	"io/fs"

	"github.com/spf13/cobra"

	"github.com/driftback/driftback/internal/githubtest"
)

// helmDemoConfig is the config of `driftback demo --helm`: one target
// whose root is the HelmRelease file of examples/helm, not a folder.
var helmDemoConfig = demoTargetConfig("web-prod", "web", "clusters/prod/web/helmrelease.yaml")

// demoHelm is `driftback demo --helm`: a Flux HelmRelease kept in Git with
// its chart (examples/helm) against the snapshot examples/helm-live.yaml,
// where someone ran kubectl set image and kubectl scale on the Deployment
// the chart renders. The pull request writes both in the release's values.
func demoHelm(cmd *cobra.Command, examples fs.FS) error {
	d, err := startDemo(cmd.Context(), examples, githubtest.Options{},
		demoExample{repo: "web", dir: "examples/helm", live: "examples/helm-live.yaml", config: helmDemoConfig, target: "web-prod"})
	if err != nil {
		return fail(err)
	}
	defer d.close()
	out, err := d.bot.Reconcile(cmd.Context(), d.target)
	if err != nil {
		return fail(err)
	}
	if err := offSpec(d.srv); err != nil {
		return fail(err)
	}
	w := cmd.OutOrStdout()
	tc := d.target.Config
	fmt.Fprintf(w, "Target %s: %s, root %s, a Flux HelmRelease whose chart is charts/web of the same repository\n", tc.Name, tc.Repo, tc.Root)
	printDemo(w, d.srv, "web", tc.Branch(), out, d.base, d.files)
	return nil
}
