package commands

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/render"
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
	// audit names the users behind writes (--audit-log, or with --config
	// the cluster's audit.logFile); nil without.
	audit *cluster.AuditTrail
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

// liveFlags are the flags that say where live objects come from.
type liveFlags struct {
	live                string // an object file, or "-" for standard input
	kubeconfig, context string
	auditLog            string // the cluster's audit log, to name who made each change
	auditComplete       bool   // the log holds every write (audit.complete)
}

func (f *liveFlags) register(fs *pflag.FlagSet, what string) {
	fs.StringVar(&f.live, "live", "", "live objects: multi-document YAML or a List, as kubectl get -o yaml prints; - reads standard input"+what)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "read live objects from the cluster of this kubeconfig (default $KUBECONFIG, then ~/.kube/config)"+what)
	fs.StringVar(&f.context, "context", "", "the kubeconfig context (default: its current context)")
	fs.StringVar(&f.auditLog, "audit-log", "", "the cluster's audit log (the apiserver's --audit-log-path, JSON lines): each edit names the user who made the write; its newest 64 MiB are read. With --config it stands for every cluster's audit.logFile")
	fs.BoolVar(&f.auditComplete, "audit-complete", false, "the --audit-log file (with --config, a cluster's audit.logFile too) holds every write the cluster's API servers accepted (one API server, or a log gathering all of theirs): only then are users named; without it edits say \"cannot tell who\"")
}

// overrides reports whether the flags name a source of their own, which
// then stands for every cluster of a config.
func (f *liveFlags) overrides() bool { return f.live != "" || f.kubeconfig != "" || f.context != "" }

func (f *liveFlags) check() error {
	if f.live != "" && (f.kubeconfig != "" || f.context != "") {
		return errors.New("--live and --kubeconfig/--context both name where live objects come from; give one")
	}
	return nil
}

// liveSource is where live objects come from: an object file, read whole
// and once (standard input cannot be read twice), or a cluster.
type liveSource struct {
	name   string           // the file, "standard input", or the apiserver's host
	file   []cluster.Object // every object of an object file
	isFile bool
	lister *cluster.ClientLister // a cluster's, read-only
	// namespace is the kubeconfig context's namespace (kubectl's default).
	namespace string
	audit     *cluster.AuditTrail // who made the writes (auditOf); nil: nobody is named
}

// openLive opens the source the flags name: the object file, or the
// cluster as kubectl finds it.
func (f *liveFlags) openLive(stdin io.Reader) (*liveSource, error) {
	s, err := f.openObjects(stdin)
	if err == nil {
		s.audit, err = f.openAudit()
	}
	if err != nil {
		return nil, err
	}
	return s, nil
}

// openAudit reads --audit-log; nil without it.
func (f *liveFlags) openAudit() (*cluster.AuditTrail, error) {
	if f.auditLog == "" {
		return nil, nil
	}
	t := newAuditTrail(config.Audit{LogFile: f.auditLog, Complete: f.auditComplete})
	if err := t.Refresh(); err != nil {
		return nil, fmt.Errorf("--audit-log: %w", err)
	}
	return t, nil
}

// openObjects opens the object file, or the cluster as kubectl finds it.
func (f *liveFlags) openObjects(stdin io.Reader) (*liveSource, error) {
	if f.live != "" {
		return openObjectFile(f.live, stdin)
	}
	rc, ns, err := cluster.KubectlConfig(f.kubeconfig, f.context)
	if err != nil {
		return nil, fmt.Errorf("no live objects: give --live FILE (- for standard input), or a cluster: %w", err)
	}
	s, err := openCluster(rc)
	if err == nil {
		s.namespace = ns
	}
	return s, err
}

// openConfigCluster opens a cluster of the config. An inCluster cluster is
// reached through the default kubeconfig when driftback runs outside one.
func openConfigCluster(c *config.Cluster) (*liveSource, error) {
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
		return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	s, err := openCluster(rc)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
	}
	return s, nil
}

func openCluster(rc *rest.Config) (*liveSource, error) {
	rc.Timeout = 30 * time.Second
	l, err := cluster.NewClientLister(rc)
	if err != nil {
		return nil, err
	}
	return &liveSource{name: rc.Host, lister: l}, nil
}

// openObjectFile reads an object file, or standard input for "-".
func openObjectFile(path string, stdin io.Reader) (*liveSource, error) {
	name := path
	var all []cluster.Object
	var err error
	if path == "-" {
		name = "standard input"
		data, rerr := io.ReadAll(io.LimitReader(stdin, cluster.MaxObjectFileBytes+1))
		switch {
		case rerr != nil:
			return nil, fmt.Errorf("%s: %w", name, rerr)
		case len(data) > cluster.MaxObjectFileBytes:
			return nil, fmt.Errorf("%s: larger than %d bytes", name, cluster.MaxObjectFileBytes)
		}
		all, err = cluster.ParseObjectFile(name, data)
	} else {
		all, err = cluster.ReadObjectFile(path)
	}
	if err != nil {
		return nil, err
	}
	if err := checkReplicas(name, all); err != nil {
		return nil, err
	}
	return &liveSource{name: name, file: all, isFile: true}, nil
}

// appliedBy reads the revision a GitOps tool applied, from the cluster or
// from every object of the file.
func (s *liveSource) appliedBy(src cluster.Source) func(context.Context) (cluster.Applied, error) {
	if s.isFile {
		return func(context.Context) (cluster.Applied, error) { return cluster.AppliedIn(s.file, src) }
	}
	return func(ctx context.Context) (cluster.Applied, error) {
		return cluster.AppliedRevision(ctx, s.lister.Dynamic(), s.lister.Metadata(), src)
	}
}

// list reads the objects of a scope (read-only).
func (s *liveSource) list(ctx context.Context, scope cluster.Scope) (liveObjects, error) {
	if s.isFile {
		name := s.name
		if len(scope.Namespaces) > 0 {
			name += " in namespace " + strings.Join(scope.Namespaces, ", ")
		}
		return liveObjects{objects: cluster.InScope(s.file, scope), source: name, empty: len(s.file) == 0, appliedBy: s.appliedBy, audit: s.audit}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	read, err := s.lister.List(ctx, scope)
	if err != nil {
		return liveObjects{}, fmt.Errorf("%s: %w", s.name, err)
	}
	return liveObjects{objects: read.Objects, coverage: read.Coverage, source: s.name, appliedBy: s.appliedBy, audit: s.audit}, nil
}

// discover finds the Flux Kustomizations and Argo CD Applications ds
// selects, in the cluster or among the file's objects.
func (s *liveSource) discover(ctx context.Context, ds *config.Discover) ([]cluster.Discovered, error) {
	f := discoverFilter(ds)
	if s.isFile {
		return cluster.DiscoverIn(s.file, f)
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	found, err := cluster.Discover(ctx, s.lister.Dynamic(), f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.name, err)
	}
	return found, nil
}

// readLive reads the live objects of plan --root: --live (-n narrows the
// file as it narrows a cluster read), or the cluster kubectl would use, in
// -n's namespaces or the context's.
func (o *planOptions) readLive(cmd *cobra.Command) (liveObjects, error) {
	s, err := o.openLive(cmd.InOrStdin())
	if err != nil {
		return liveObjects{}, err
	}
	scope := cluster.Scope{Namespaces: o.namespaces}
	if len(scope.Namespaces) == 0 && !s.isFile {
		scope.Namespaces = []string{s.namespace}
	}
	return s.list(cmd.Context(), scope)
}

// replicaKinds are the built-in kinds whose spec.replicas the apiserver
// holds to an int32 of at least 0.
var replicaKinds = map[string]bool{"Deployment.apps": true, "StatefulSet.apps": true, "ReplicaSet.apps": true, "ReplicationController": true}

// checkReplicas refuses an object file holding a replica count no
// apiserver would have stored: that object was never read from a cluster,
// and its count is no value to propose to Git.
func checkReplicas(source string, objs []cluster.Object) error {
	for _, o := range objs {
		spec, _ := o.Object["spec"].(map[string]any)
		n, set := spec["replicas"]
		if !replicaKinds[kindKeyOf(o.Object)] || !set || n == nil || replicaCount(n) {
			continue
		}
		return fmt.Errorf("%s: %s: spec.replicas is %#v; the apiserver accepts a whole number from 0 to %d, so nothing was planned",
			source, analyzer.RefOf(o.Object), n, math.MaxInt32)
	}
	return nil
}

// kindKeyOf is an object's kind as kube.KindKey names it (Kind.group, or
// Kind for the core group), read from its apiVersion and kind.
func kindKeyOf(obj map[string]any) string {
	id := render.IDOf(obj)
	return kube.KindKey(id.Group, id.Kind)
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
