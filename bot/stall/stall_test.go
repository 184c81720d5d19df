package stall

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/driftback/driftback/bot/app"
	"github.com/driftback/driftback/bot/archive"
	"github.com/driftback/driftback/bot/pollstate"
	"github.com/driftback/driftback/config"
)

// What is a stall and what its check run says depend on the cause alone:
// a commit GitHub lacks, a GitOps object gone or unreadable, a kind the
// cluster refuses to list. A blip (a 5xx, the network) is no stall.
func TestStallsAreCausesAPersonMustFix(t *testing.T) {
	p := &pollstate.Poll{Place: app.Place{Target: config.Target{Name: "shop", Cluster: "prod", Repo: "acme/shop"}, Owner: "acme", Repo: "shop"}}
	applications := schema.GroupResource{Group: "argoproj.io", Resource: "applications"}
	deploys := schema.GroupResource{Group: "apps", Resource: "deployments"}
	for _, c := range []struct {
		name  string
		err   error
		title string // "" for no stall
	}{
		{"missing commit", &archive.MissingCommit{SHA: "0123456789abcdef", Err: errors.New("404")}, "The applied revision is a commit GitHub does not have"},
		{"applied object gone", &AppliedErr{Err: apierrors.NewNotFound(applications, "shop")}, "The GitOps object the applied revision is read from is gone"},
		{"applied object forbidden", &AppliedErr{Err: apierrors.NewForbidden(applications, "shop", errors.New("no"))}, "driftback cannot read the applied revision"},
		{"a kind refused", fmt.Errorf("list: %w", apierrors.NewForbidden(deploys, "", errors.New("no"))), "driftback could not read the cluster"},
		{"a 5xx", apierrors.NewInternalError(errors.New("etcd")), ""},
		{"the network", errors.New("connection refused"), ""},
		{"applied object behind a timeout", &AppliedErr{Err: apierrors.NewTimeoutError("slow", 1)}, ""},
	} {
		s := Of(p, c.err)
		switch {
		case c.title == "" && s != nil:
			t.Errorf("%s: a stall %q", c.name, s.Title)
		case c.title != "" && (s == nil || s.Title != c.title):
			t.Errorf("%s: %+v, want %q", c.name, s, c.title)
		case s != nil && (!strings.Contains(s.Summary, "How to fix") || s.Short == ""):
			t.Errorf("%s: the summary says no fix, or no short line: %+v", c.name, s)
		}
	}
}
