package commands

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
	"github.com/driftback/driftback/internal/kube"
)

// liveObjects are live objects and where they came from.
type liveObjects struct {
	objects  []cluster.Object
	coverage *kube.Coverage // what a cluster read covered; nil for a file
	source   string
	empty    bool // an object file that held no objects at all
	// appliedBy reads the revision a GitOps tool applied from the same
	// source (the cluster, or every object of the file).
	appliedBy func(src cluster.Source) func(context.Context) (cluster.Applied, error)
}

// applied is how a target's applied revision is read; nil when the target
// renders at the base head.
func (l liveObjects) applied(t *config.Target) func(context.Context) (cluster.Applied, error) {
	src, ok := revisionSource(t)
	if !ok {
		return nil
	}
	return l.appliedBy(src)
}

// readLive reads --live (a file or standard input), or a cluster found as
// kubectl finds it. scope narrows what is read (a target's scope).
func (o *planOptions) readLive(cmd *cobra.Command, scope cluster.Scope) (liveObjects, error) {
	if o.live != "" {
		if len(scope.Namespaces) == 0 && scope.NamespaceSelector == "" {
			// -n narrows an object file as it narrows a cluster read.
			scope.Namespaces = o.namespaces
		}
		return o.readObjectFile(cmd.InOrStdin(), scope)
	}
	rc, ns, err := cluster.KubectlConfig(o.kubeconfig, o.context)
	if err != nil {
		return liveObjects{}, fmt.Errorf("no live objects: give --live FILE (- for standard input), or a cluster: %w", err)
	}
	if len(scope.Namespaces) == 0 && scope.NamespaceSelector == "" {
		scope.Namespaces = o.namespaces
		if len(scope.Namespaces) == 0 {
			scope.Namespaces = []string{ns}
		}
	}
	return listCluster(cmd.Context(), rc, scope)
}

// readObjectFile reads --live and keeps the objects in scope; an applied
// revision is looked up among all of the file's objects.
func (o *planOptions) readObjectFile(stdin io.Reader, scope cluster.Scope) (liveObjects, error) {
	name := o.live
	var all []cluster.Object
	var err error
	if o.live == "-" {
		name = "standard input"
		data, rerr := io.ReadAll(io.LimitReader(stdin, cluster.MaxObjectFileBytes+1))
		switch {
		case rerr != nil:
			return liveObjects{}, fmt.Errorf("%s: %w", name, rerr)
		case len(data) > cluster.MaxObjectFileBytes:
			return liveObjects{}, fmt.Errorf("%s: larger than %d bytes", name, cluster.MaxObjectFileBytes)
		}
		all, err = cluster.ParseObjectFile(name, data)
	} else {
		all, err = cluster.ReadObjectFile(o.live)
	}
	if err != nil {
		return liveObjects{}, err
	}
	if err := checkReplicas(name, all); err != nil {
		return liveObjects{}, err
	}
	if len(scope.Namespaces) > 0 {
		name += " in namespace " + strings.Join(scope.Namespaces, ", ")
	}
	return liveObjects{objects: cluster.InScope(all, scope), source: name, empty: len(all) == 0,
		appliedBy: func(src cluster.Source) func(context.Context) (cluster.Applied, error) {
			return func(context.Context) (cluster.Applied, error) { return cluster.AppliedIn(all, src) }
		}}, nil
}

// replicaKinds are the built-in kinds whose spec.replicas the apiserver
// holds to an int32 of at least 0.
var replicaKinds = map[string]bool{"Deployment.apps": true, "StatefulSet.apps": true, "ReplicaSet.apps": true, "ReplicationController": true}

// checkReplicas refuses an object file holding a replica count no
// apiserver would have stored: that object was never read from a cluster,
// and its count is no value to propose to Git.
func checkReplicas(source string, objs []cluster.Object) error {
	for _, o := range objs {
		av, _ := o.Object["apiVersion"].(string)
		kind, _ := o.Object["kind"].(string)
		group, _, versioned := strings.Cut(av, "/")
		if !versioned {
			group = ""
		}
		spec, _ := o.Object["spec"].(map[string]any)
		n, set := spec["replicas"]
		if !replicaKinds[kube.KindKey(group, kind)] || !set || n == nil || replicaCount(n) {
			continue
		}
		return fmt.Errorf("%s: %s: spec.replicas is %#v; the apiserver accepts a whole number from 0 to %d, so nothing was planned",
			source, analyzer.RefOf(o.Object), n, math.MaxInt32)
	}
	return nil
}

// replicaCount reports whether v is a replica count: an int32 >= 0.
func replicaCount(v any) bool {
	switch n := v.(type) {
	case int64:
		return n >= 0 && n <= math.MaxInt32
	case float64:
		return n == math.Trunc(n) && n >= 0 && n <= math.MaxInt32
	}
	return false
}

// targetCluster reads a target's objects from the cluster its config names.
// An inCluster cluster is reached through the default kubeconfig when plan
// runs outside a cluster.
func targetCluster(ctx context.Context, c *config.Cluster, scope cluster.Scope) (liveObjects, error) {
	var rc *rest.Config
	var err error
	if c.InCluster {
		if rc, err = cluster.RESTConfig("", ""); err != nil {
			rc, _, err = cluster.KubectlConfig("", "")
		}
	} else {
		rc, err = cluster.RESTConfig(c.Kubeconfig, c.Context)
	}
	if err != nil {
		return liveObjects{}, fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	return listCluster(ctx, rc, scope)
}

// listCluster reads the objects of a scope from a cluster (read-only).
func listCluster(ctx context.Context, rc *rest.Config, scope cluster.Scope) (liveObjects, error) {
	rc.Timeout = 30 * time.Second
	lister, err := cluster.NewClientLister(rc)
	if err != nil {
		return liveObjects{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	read, err := lister.List(ctx, scope)
	if err != nil {
		return liveObjects{}, fmt.Errorf("%s: %w", rc.Host, err)
	}
	return liveObjects{objects: read.Objects, coverage: read.Coverage, source: rc.Host,
		appliedBy: func(src cluster.Source) func(context.Context) (cluster.Applied, error) {
			return func(ctx context.Context) (cluster.Applied, error) {
				return cluster.AppliedRevision(ctx, lister.Dynamic(), lister.Metadata(), src)
			}
		}}, nil
}
