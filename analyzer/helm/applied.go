package helm

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/driftback/driftback/internal/yamledit"
)

// AppliedFile says why the HelmRelease file f, read from file, is not the
// whole truth of the HelmRelease applied from it (applied, as the
// kustomization that applies it renders it, in namespace), "" when it is:
// the file holds that one HelmRelease with the same API version, name and
// spec, and in the namespace it was applied in, or in none with a
// spec.targetNamespace (the release's namespace LoadFluxRelease reads).
// Its labels and annotations do not change what Helm renders. substituted
// says the applier substitutes ${...} variables after the render (a Flux
// Kustomization's spec.postBuild): a file that holds any is not what was
// applied either.
func AppliedFile(f *yamledit.File, file string, applied map[string]any, namespace string, substituted bool) (string, error) {
	_, doc, err := oneRelease(f, file)
	var several severalReleases
	if errors.As(err, &several) {
		return err.Error(), nil
	}
	if err != nil {
		return "", err
	}
	meta, _ := doc["metadata"].(map[string]any)
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	ameta, _ := applied["metadata"].(map[string]any)
	spec, _ := doc["spec"].(map[string]any)
	target, _ := spec["targetNamespace"].(string)
	switch {
	case substituted && strings.Contains(string(canonical(doc)), "${"):
		return fmt.Sprintf("%s holds ${...} variables that are substituted after the render (spec.postBuild): the file is not what was applied", file), nil
	case doc["apiVersion"] != applied["apiVersion"]:
		return fmt.Sprintf("%s declares the HelmRelease as %v, applied as %v", file, doc["apiVersion"], applied["apiVersion"]), nil
	case name != ameta["name"]:
		return fmt.Sprintf("%s names the HelmRelease %s, applied as %v (a name prefix or suffix): the file is not what was applied", file, name, ameta["name"]), nil
	case ns != "" && ns != namespace:
		return fmt.Sprintf("%s puts the HelmRelease in namespace %s, applied in %s: the file is not what was applied", file, ns, namespace), nil
	case ns == "" && target == "":
		return fmt.Sprintf("%s names no namespace for the HelmRelease (what applies it puts it in %s): a HelmRelease target's file sets metadata.namespace or spec.targetNamespace", file, namespace), nil
	case string(canonical(doc["spec"])) != string(canonical(applied["spec"])):
		return fmt.Sprintf("the kustomization that applies %s changes the HelmRelease's spec (a patch, or a setting of the Flux Kustomization): the file is not what was applied", file), nil
	}
	return "", nil
}

// severalReleases is the error of a file, named, that holds several
// HelmReleases where one is asked for.
type severalReleases string

func (s severalReleases) Error() string {
	return string(s) + " holds several HelmReleases; a plan's root names a file with one"
}

// canonical is v as JSON, map keys sorted: YAML's and a render's numbers
// compare alike.
func canonical(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
