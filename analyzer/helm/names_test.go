package helm

import "testing"

// The shortened names are helm-controller's own test cases
// (internal/release/name_test.go).
func TestFluxReleaseName(t *testing.T) {
	for _, tc := range []struct{ name, target, release, want string }{
		{"podinfo", "", "", "podinfo"},
		{"podinfo", "apps", "", "apps-podinfo"},
		{"podinfo", "apps", "web", "web"},
		{"release-name-with-very-long-name-which-is-longer-than-53-characters", "", "", "release-name-with-very-long-name-which-i-788ca0d0d7b0"},
		{"name-with-very-long-name-which-is-longer-than-53-characters", "another-release", "", "another-release-name-with-very-long-name-7e72150d5a36"},
	} {
		if got := FluxReleaseName(tc.name, tc.target, tc.release); got != tc.want {
			t.Errorf("FluxReleaseName(%q, %q, %q) = %q, want %q", tc.name, tc.target, tc.release, got, tc.want)
		}
	}
	if FluxReleaseNamespace("flux-system", "apps") != "apps" || FluxReleaseNamespace("flux-system", "") != "flux-system" {
		t.Error("FluxReleaseNamespace")
	}
	if ArgoReleaseName("argocd_web", "") != "web" || ArgoReleaseName("web", "") != "web" || ArgoReleaseName("web", "site") != "site" {
		t.Error("ArgoReleaseName")
	}
}
