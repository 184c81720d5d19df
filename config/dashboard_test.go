package config

import (
	"strings"
	"testing"
)

const tools = `- name: tools
  repo: my-org/tools
  root: .
  cluster: prod
  namespaces: [tools]
  appliedRevision: {head: true}
`

func TestDashboards(t *testing.T) {
	ok := base + tools + "dashboards:\n- my-org/shop\n- My-Org/tools\n"
	c, err := Parse("driftback.yaml", []byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	// Kept as written: the runner matches them to targets' repos in any
	// case (bot's hasDashboard).
	if strings.Join(c.Dashboards, ",") != "my-org/shop,My-Org/tools" {
		t.Fatalf("dashboards: %v", c.Dashboards)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"dashboards:\n- shop\n", "dashboards[0]: \"shop\" is not owner/name"},
		{"dashboards:\n- other-org/shop\n", "differs from github.owner"},
		{"dashboards:\n- my-org/shop\n- my-org/SHOP\n", "listed twice"},
		{"dashboards: my-org/shop\n", "dashboards"},
		{"dashboards:\n- my-org/typo\n", "no target is on my-org/typo"},
	} {
		_, err := Parse("driftback.yaml", []byte(base+tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
