package bot

import (
	"os"
	"reflect"
	"testing"

	"go.yaml.in/yaml/v3"
)

// manifestPermissions reads the permissions app.yaml asks for; the test
// server's App holds exactly these.
func manifestPermissions(t testing.TB) map[string]string {
	b, err := os.ReadFile("../app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Permissions map[string]string `yaml:"default_permissions"`
	}
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m.Permissions
}

// The App asks for exactly what the bot uses (DESIGN §12): contents (the
// branch), pull requests, checks, members (team reviewers); metadata is
// implied. Nothing else (issues: write only with app create --dashboard,
// for drift dashboards); and exactly the webhook events the bot acts on.
func TestAppManifestPermissions(t *testing.T) {
	b, err := os.ReadFile("../app.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Name        string            `yaml:"name"`
		URL         string            `yaml:"url"`
		Permissions map[string]string `yaml:"default_permissions"`
		Events      []string          `yaml:"default_events"`
	}
	if err := yaml.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"contents": "write", "pull_requests": "write", "checks": "write", "metadata": "read", "members": "read"}
	if !reflect.DeepEqual(m.Permissions, want) || !reflect.DeepEqual(m.Events, []string{"check_run", "check_suite", "pull_request", "push", "repository"}) || m.Name == "" || m.URL == "" {
		t.Fatalf("manifest %+v", m)
	}
}
