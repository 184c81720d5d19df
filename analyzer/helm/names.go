package helm

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// FluxReleaseName is the Helm release name helm-controller gives a
// HelmRelease: spec.releaseName, or else [spec.targetNamespace-]name; a
// name longer than 53 characters becomes its first 40 characters, "-" and
// the first 12 hex digits of its SHA-256.
func FluxReleaseName(name, targetNamespace, releaseName string) string {
	n := releaseName
	if n == "" {
		n = name
		if targetNamespace != "" {
			n = targetNamespace + "-" + name
		}
	}
	const limit, hashLen = 53, 12
	if len(n) <= limit {
		return n
	}
	sum := sha256.Sum256([]byte(n))
	return n[:limit-hashLen-1] + "-" + hex.EncodeToString(sum[:])[:hashLen]
}

// FluxReleaseNamespace is the namespace a HelmRelease installs into:
// spec.targetNamespace, or else the HelmRelease's own namespace.
func FluxReleaseNamespace(namespace, targetNamespace string) string {
	if targetNamespace != "" {
		return targetNamespace
	}
	return namespace
}

// ArgoReleaseName is the release name Argo CD's repo-server templates an
// Application's chart with: spec.source.helm.releaseName, or else the
// Application's name (without the "namespace_" an instance name may
// carry). Argo CD does not shorten it.
func ArgoReleaseName(appName, releaseName string) string {
	if releaseName != "" {
		return releaseName
	}
	if _, name, ok := strings.Cut(appName, "_"); ok {
		return name
	}
	return appName
}
