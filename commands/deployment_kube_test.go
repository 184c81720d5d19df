package commands

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/driftback/driftback/internal/kubetest"
)

// Issue 54, item 8: a deployment's name is what its replicas share and
// keep across restarts and upgrades, and another deployment does not: a
// pod of the same namespace of the same cluster (another replica, or the
// same one restarted) gets the same name, a pod of another namespace
// another; without Leases, the pod's namespace stands for theirs. Without
// a namespace, or where the cluster cannot be read, it has none, and says
// why.
func TestADeploymentIsNamedByItsClusterAndNamespace(t *testing.T) {
	env, err := kubetest.StartWith(kubetest.Assets(t), kubetest.Options{Users: []kubetest.User{{Name: "nobody"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(env.Stop)
	ctx := context.Background()
	name := func(namespace, kubeconfig string) (string, string) {
		var logs bytes.Buffer
		o := &runOptions{leaseNamespace: namespace, leaseKubeconfig: kubeconfig}
		return o.deployment(ctx, slog.New(slog.NewTextHandler(&logs, nil))), logs.String()
	}
	a, _ := name("driftback", env.Kubeconfig)
	replica, _ := name("driftback", env.Kubeconfig)
	other, _ := name("driftback-staging", env.Kubeconfig)
	if len(a) != 12 || replica != a || other == a || other == "" {
		t.Fatalf("names %q, %q (a replica of it), %q (another namespace): want one 12-digit name for the first two, another for the third", a, replica, other)
	}
	if id, err := deploymentID(ctx, env.Config, "driftback"); err != nil || id != a {
		t.Fatalf("deploymentID = %q, %v; want %q", id, err, a)
	}
	// Without Leases (--lease-namespace=), the pod's namespace.
	t.Setenv("POD_NAMESPACE", "driftback")
	if n, _ := name("", env.Kubeconfig); n != a {
		t.Errorf("without Leases, in the same namespace: %q, want %q", n, a)
	}
	t.Setenv("POD_NAMESPACE", "")
	if n, logs := name("", env.Kubeconfig); n != "" || !strings.Contains(logs, "no namespace") {
		t.Errorf("without a namespace: %q, log %s", n, logs)
	}
	// A service account without get on the namespace kube-system.
	if n, logs := name("driftback", env.Kubeconfigs["nobody"]); n != "" || !strings.Contains(logs, "level=WARN") || !strings.Contains(logs, "kube-system") {
		t.Errorf("without access to kube-system: %q, log %s", n, logs)
	}
}
