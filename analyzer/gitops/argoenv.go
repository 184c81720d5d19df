package gitops

import (
	"os"
	"slices"
	"strings"

	"github.com/driftback/driftback/analyzer/dye"
)

// Argo CD's build environment (DESIGN §7). Before it runs `kustomize edit`,
// the repo server (v3.x: reposerver/repository's newEnv, util/kustomize's
// Build) expands its own environment in some of an Application's kustomize
// settings: in every images entry, in every commonLabels value, and in every
// commonAnnotations value when commonAnnotationsEnvsubst is true; nothing
// else. The expansion is Go's os.Expand over a fixed list of names:
// ${NAME} and $NAME take the value, $$ is one $, and any name the list lacks
// becomes empty (KUBE_VERSION and KUBE_API_VERSIONS are given to plugins
// only, never to this expansion).

// env is the build environment of the Application: a value driftback
// cannot know (the instance name when Argo CD's namespace was not found,
// the revision when the applied one is not known) is its unknown marker,
// so the field it reaches is compared around it and never written.
func (g *Argo) env() map[string]string {
	b := g.Ctx.Build
	env := map[string]string{
		"ARGOCD_APP_NAME":                   b.Instance,
		"ARGOCD_APP_NAMESPACE":              b.DestinationNamespace,
		"ARGOCD_APP_PROJECT_NAME":           b.Project,
		"ARGOCD_APP_REVISION":               b.Revision,
		"ARGOCD_APP_REVISION_SHORT":         prefix(b.Revision, 7),
		"ARGOCD_APP_REVISION_SHORT_8":       prefix(b.Revision, 8),
		"ARGOCD_APP_SOURCE_REPO_URL":        b.RepoURL,
		"ARGOCD_APP_SOURCE_PATH":            b.Path,
		"ARGOCD_APP_SOURCE_TARGET_REVISION": b.TargetRevision,
	}
	if b.Instance == "" {
		env["ARGOCD_APP_NAME"] = unknownMarker("ARGOCD_APP_NAME")
	}
	if b.Revision == "" {
		for _, n := range []string{"ARGOCD_APP_REVISION", "ARGOCD_APP_REVISION_SHORT", "ARGOCD_APP_REVISION_SHORT_8"} {
			env[n] = unknownMarker(n)
		}
	}
	return env
}

func prefix(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// expand is s as the repo server expands it.
func (g *Argo) expand(s string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	env := g.env()
	return os.Expand(s, func(name string) string {
		if name == "$" {
			return "$"
		}
		return env[name]
	})
}

// ArgoReferences names what the repo server's expansion reads in s, in
// order, once each: "${NAME}" for a variable (its own name whether or
// not the environment sets it), "$$" for an escaped dollar.
func ArgoReferences(s string) []string {
	var out []string
	os.Expand(s, func(name string) string {
		ref := "${" + name + "}"
		if name == "$" {
			ref = "$$"
		}
		if !slices.Contains(out, ref) {
			out = append(out, ref)
		}
		return ""
	})
	return out
}

// expanded records that the setting at key of the rewritten root holds
// text the repo server expands (raw, as the Application holds it), and
// returns the expanded text.
func (e *argoEdit) expanded(setting Setting, raw string) string {
	if !strings.Contains(raw, "$") {
		return raw
	}
	if e.root.Expanded == nil {
		e.root.Expanded = map[string][]string{}
	}
	refs := ArgoReferences(raw)
	if len(refs) == 0 {
		refs = []string{"$"}
	}
	e.root.Expanded[setting.Path.String()] = refs
	return e.g.expand(raw)
}

// ArgoOverrideKeeps reports whether setting field of the Argo CD image
// override cur (as the Application holds it) keeps every $ of it as it is:
// the part the field sets holds none, and the rest reads back unchanged.
// Written so, the override keeps its variables, and verify's render, which
// expands them again, proves the value.
func ArgoOverrideKeeps(cur any, field string) bool {
	s, _ := cur.(string)
	if !strings.Contains(s, "$") {
		return true
	}
	im := argoImage(s)
	if argoImageString(im) != s {
		return false
	}
	if field == dye.FieldNewName {
		return !strings.Contains(im.NewName, "$")
	}
	return !strings.Contains(im.NewTag, "$") && !strings.Contains(im.Digest, "$")
}

// ArgoUnknownMeaning says what a value marked unknown in a render is, for
// messages.
func ArgoUnknownMeaning(name string) string {
	switch name {
	case managedByVersion:
		return "the version of the kustomize binary Argo CD runs, which kustomize.buildOptions --enable-managedby-label writes into app.kubernetes.io/managed-by"
	case "ARGOCD_APP_NAME":
		return "${ARGOCD_APP_NAME} (the Application's instance name: its name in Argo CD's own namespace, namespace_name in another; argocd-cm was not found beside it, so which is not known)"
	}
	return "${" + name + "} (the revision Argo CD built from is not known)"
}
