package gitops

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/api/konfig"
	"sigs.k8s.io/kustomize/api/resource"

	"github.com/driftback/driftback/internal/repofs"
)

// How the repo server runs `kustomize build` (DESIGN §7): with argocd-cm's
// kustomize.buildOptions appended to the command line, and with the binary
// argocd-cm registers under the name the Application's kustomize.version
// gives (the bundled one when it gives none). driftback builds with its
// kustomize library; an option it can apply is applied, any other, and a
// version whose behaviour may differ, refuses the target by name.

// libraryKustomize is the kustomize release driftback's library is part of
// (sigs.k8s.io/kustomize/api v0.21 ships as kustomize v5.8), and the
// release Argo CD v3.3 bundles.
const libraryKustomize = "v5.8"

// sameRelease matches a version name of that release: v5.8, 5.8.0, v5.8.2.
var sameRelease = regexp.MustCompile(`^v?5\.8(\.[0-9]+)?$`)

// managedByVersion names the unknown version of the kustomize binary that
// --enable-managedby-label writes into every object.
const managedByVersion = "kustomize_binary_version"

// argoBuildOptions is what argocd-cm's kustomize.buildOptions ask of the
// build, as far as driftback applies it.
type argoBuildOptions struct {
	managedBy bool // --enable-managedby-label
	loadNone  bool // --load-restrictor LoadRestrictionsNone
	refused   []string
}

// buildOptions reads argocd-cm's kustomize.buildOptions as the repo server
// passes them to `kustomize build` (split on white space).
func (g *Argo) buildOptions() argoBuildOptions {
	var o argoBuildOptions
	fields := strings.Fields(g.Ctx.Build.BuildOptions)
	for i := 0; i < len(fields); i++ {
		opt := fields[i]
		name, value, hasValue := strings.Cut(opt, "=")
		switch name {
		case "--enable-managedby-label":
			switch value {
			case "", "true":
				o.managedBy = true
				continue
			case "false":
				o.managedBy = false
				continue
			}
		case "--load-restrictor":
			if !hasValue && i+1 < len(fields) {
				i++
				value, opt = fields[i], opt+" "+fields[i]
			}
			switch value {
			case "LoadRestrictionsNone":
				o.loadNone = true
				continue
			case "LoadRestrictionsRootOnly":
				o.loadNone = false
				continue
			}
		case "--enable-helm":
			o.refused = append(o.refused, "kustomize.buildOptions "+opt+" of argocd-cm (driftback does not inflate Helm charts)")
			continue
		}
		o.refused = append(o.refused, "kustomize.buildOptions "+opt+" of argocd-cm")
	}
	return o
}

// Unmodelled names what of the Application's build driftback does not
// render as the repo server does: a build option it does not apply, a
// named kustomize version of another release. None, usually.
func (g *Argo) Unmodelled() []string {
	out := g.buildOptions().refused
	if v, _ := g.Ctx.Kustomize["version"].(string); v != "" && !sameRelease.MatchString(v) {
		out = append(out, fmt.Sprintf("%s.kustomize.version %s of %s (its kustomize binary may build otherwise than kustomize %s, which driftback runs)",
			g.Ctx.Source, v, g.by(), libraryKustomize))
	}
	return out
}

// Kustomizes reports whether the repo server builds root with kustomize:
// when the Application gives kustomize settings, or the folder has a
// kustomization; a plain folder is read as a directory, without
// kustomize or its build options.
func (g *Argo) Kustomizes(repo *repofs.Repo, root string) bool {
	return len(g.Ctx.Kustomize) > 0 || kustomizationFile(repo, root) != ""
}

// PostBuilds reports whether the build options change the build beyond
// the root kustomization: the render then runs with g as its PostBuild.
func (g *Argo) PostBuilds() bool {
	o := g.buildOptions()
	return o.managedBy || o.loadNone
}

// LoadRestrictionsNone reports whether kustomize may read files outside
// the root (--load-restrictor LoadRestrictionsNone).
func (g *Argo) LoadRestrictionsNone() bool { return g.buildOptions().loadNone }

// PostBuild adds what --enable-managedby-label adds to every built object:
// app.kubernetes.io/managed-by, kustomize- and the binary's version, which
// is not known here and renders as a marker.
func (g *Argo) PostBuild(res *resource.Resource) error {
	if !g.buildOptions().managedBy {
		return nil
	}
	l := res.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[konfig.ManagedbyLabelKey] = "kustomize-" + unknownMarker(managedByVersion)
	return res.SetLabels(l)
}

// Key is what the build options change in a render, for the render cache.
func (g *Argo) Key() []byte {
	o := g.buildOptions()
	b, _ := json.Marshal([]any{"argo", o.managedBy, o.loadNone})
	return b
}
