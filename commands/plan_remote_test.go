package commands

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The remotebase fixture split into what a user has on disk: the overlay's
// checkout and a checkout of the remote base's repository.
func TestPlanRemoteFlag(t *testing.T) {
	fixture := "../analyzer/testdata/remotebase"
	repo := copyTree(t, filepath.Join(fixture, "overlays"))
	if err := os.Rename(repo, repo+".tmp"); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(repo+".tmp", filepath.Join(repo, "overlays")); err != nil {
		t.Fatal(err)
	}
	platform := copyTree(t, filepath.Join(fixture, ".driftback-remote/github/acme/platform/v1.2.0"))
	deploy, _ := os.ReadFile(filepath.Join(platform, "web/deployment.yaml"))
	live := filepath.Join(t.TempDir(), "live.yaml")
	liveYAML := strings.Replace(strings.Replace(string(deploy), "name: web\n", "name: web\n  namespace: prod\n", 1), "containerPort: 8080", "containerPort: 9090", 1) +
		"---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-settings\n  namespace: prod\ndata:\n  mode: safe\n---\n" +
		strings.Replace(mustRead(t, filepath.Join(platform, "web/service.yaml")), "name: web\n", "name: web\n  namespace: prod\n", 1)
	if err := os.WriteFile(live, []byte(liveYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	var plan struct {
		Refusals []struct{ Code, Feature, Message string }
		Files    []struct{ Path string }
	}
	args := []string{"plan", "--repo", repo, "--root", "overlays/prod", "--live", live, "-o", "json"}

	// Without the mapping the root is refused, naming the flag.
	out, stderr, code := driftback(t, args...)
	if code != 1 || json.Unmarshal([]byte(out), &plan) != nil || len(plan.Files) != 0 || len(plan.Refusals) != 1 ||
		!strings.Contains(plan.Refusals[0].Message, "not fetched") {
		t.Fatalf("unmapped: exit %d %s\n%s", code, stderr, out)
	}

	out, stderr, code = driftback(t, append(args, "--write", "--remote", "https://github.com/acme/platform?ref=v1.2.0="+platform)...)
	plan.Refusals, plan.Files = nil, nil
	if code != 1 || json.Unmarshal([]byte(out), &plan) != nil {
		t.Fatalf("mapped: exit %d %s\n%s", code, stderr, out)
	}
	// The port the remote base supplies is overridden in a new patch of
	// the overlay; the overlay's own ConfigMap is written where it stands.
	var paths []string
	for _, f := range plan.Files {
		paths = append(paths, f.Path)
	}
	if strings.Join(paths, " ") != "overlays/prod/deployment-web.yaml overlays/prod/kustomization.yaml overlays/prod/settings.yaml" || len(plan.Refusals) != 0 {
		t.Fatalf("mapped plan:\n%s", out)
	}
	if got := mustRead(t, filepath.Join(repo, "overlays/prod/settings.yaml")); !strings.Contains(got, `mode: "safe"`) {
		t.Errorf("--write: settings.yaml\n%s", got)
	}
	if got := mustRead(t, filepath.Join(repo, "overlays/prod/deployment-web.yaml")); !strings.Contains(got, "containerPort: 9090") {
		t.Errorf("--write: the new patch\n%s", got)
	}
	if got := mustRead(t, filepath.Join(platform, "web/deployment.yaml")); got != string(deploy) {
		t.Errorf("--write changed the remote checkout:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(repo, ".driftback-remote")); err == nil {
		t.Error("--write created the reserved folder in the checkout")
	}

	for _, bad := range []string{"github.com/acme/platform=" + platform, "gitlab.com/a/b?ref=v1=" + platform, "github.com/acme/platform//web?ref=v1=" + platform} {
		if _, stderr, code := driftback(t, append(args, "--remote", bad)...); code != 2 || stderr == "" {
			t.Errorf("--remote %s: exit %d %q", bad, code, stderr)
		}
	}
}

func mustRead(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
