package commands

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/driftback/driftback/cluster"
)

// deployment names this deployment for bot.Options.Deployment (issue 54,
// item 8): two deployments of one App at one instance must tell their
// writes apart, and the replicas of one, and one restarted or upgraded,
// must not. So it is derived, never generated: from the cluster the
// Leases live in (its kube-system namespace's uid, which lives as long as
// the cluster) and the lease namespace (deployments that share one share
// their targets through its Leases already, bot/shard), or without Leases
// the pod's own. "" when there is no namespace (a process outside
// Kubernetes is its own deployment) or the cluster cannot be read: its
// writes then carry no deployment, and it stands back for none, as
// earlier versions.
func (o *runOptions) deployment(ctx context.Context, log *slog.Logger) string {
	namespace := o.leaseNamespace
	if namespace == "" {
		namespace = os.Getenv("POD_NAMESPACE")
	}
	if namespace == "" {
		log.Info("no namespace (--lease-namespace, $POD_NAMESPACE): this deployment carries no name of its own, and cannot tell another deployment of this App at this instance from itself (set instance in each)")
		return ""
	}
	rc, err := cluster.RESTConfig(o.leaseKubeconfig, "")
	if err == nil {
		var id string
		if id, err = deploymentID(ctx, rc, namespace); err == nil {
			log.Info("deployment", "deployment", id, "namespace", namespace)
			return id
		}
	}
	log.Warn("this deployment's name could not be derived (it needs get on the namespace kube-system): it cannot tell another deployment of this App at this instance from itself (set instance in each)",
		"error", err.Error())
	return ""
}

// deploymentID is the deployment in namespace of rc's cluster: 12 hex
// digits of a hash, as it is written into pull requests and commits.
func deploymentID(ctx context.Context, rc *rest.Config, namespace string) (string, error) {
	c, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	ns, err := c.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("the cluster's identity (namespace %s): %w", metav1.NamespaceSystem, err)
	}
	sum := sha256.Sum256([]byte(string(ns.UID) + "/" + namespace))
	return hex.EncodeToString(sum[:])[:12], nil
}
