package bot

import (
	"strings"
	"testing"
)

// The test server's App holds exactly what app.yaml asks for, and GitHub
// refuses each endpoint an installation's permissions do not cover. So a
// manifest that lost any permission the bot relies on fails here, at the
// first poll, with GitHub's 403.
func TestManifestMissingAPermissionFailsTheFirstPoll(t *testing.T) {
	for _, drop := range []string{"contents", "pull_requests", "checks"} {
		t.Run(drop, func(t *testing.T) {
			h := newHarness(t, writeThroughOnly(t))
			perms := manifestPermissions(t)
			if _, ok := perms[drop]; !ok {
				t.Fatalf("app.yaml does not ask for %s", drop)
			}
			delete(perms, drop)
			h.srv.SetAppPermissions(appID, perms)
			err := h.pollErr()
			if err == nil || !strings.Contains(err.Error(), "Resource not accessible by integration") {
				t.Fatalf("first poll without %s: %v", drop, err)
			}
		})
	}
}
