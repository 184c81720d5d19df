package installtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/driftback/driftback/internal/kubetest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// Kubectl runs the kubectl commands the guide gives, against a test
// apiserver, as the cluster admin who installs driftback. Relative paths
// are read from Dir, the folder the user types them in.
type Kubectl struct {
	Config *rest.Config
	Dir    string
}

// Run runs one command, or says it is not one the walk knows: the walk
// never guesses at a step.
func (k Kubectl) Run(ctx context.Context, args []string) error {
	run, err := k.step(args)
	if err != nil {
		return err
	}
	return run(ctx)
}

// Knows says whether Run knows the command, without running it.
func (k Kubectl) Knows(args []string) bool {
	_, err := k.step(args)
	return err == nil
}

// step is the command args as a function to run.
func (k Kubectl) step(args []string) (func(context.Context) error, error) {
	if len(args) == 0 || args[0] != "kubectl" {
		return nil, fmt.Errorf("not a kubectl command: %q", args)
	}
	ns, rest := "", args[1:]
	if len(rest) >= 2 && (rest[0] == "-n" || rest[0] == "--namespace") {
		ns, rest = rest[1], rest[2:]
	}
	switch {
	case len(rest) == 3 && rest[0] == "create" && rest[1] == "namespace":
		return func(ctx context.Context) error { return k.createNamespace(ctx, rest[2]) }, nil
	case len(rest) >= 4 && rest[0] == "create" && rest[1] == "secret" && rest[2] == "generic":
		return func(ctx context.Context) error { return k.createSecret(ctx, ns, rest[3], rest[4:]) }, nil
	case len(rest) == 3 && (rest[0] == "apply" || rest[0] == "delete") && (rest[1] == "-k" || rest[1] == "-f"):
		return func(ctx context.Context) error { return k.applyOrDelete(ctx, rest[0], rest[1], rest[2], ns) }, nil
	case len(rest) == 3 && rest[0] == "delete" && (rest[1] == "namespace" || rest[1] == "secret"):
		return func(ctx context.Context) error { return k.deleteNamed(ctx, ns, rest[1], rest[2]) }, nil
	case len(rest) == 4 && rest[0] == "delete" && rest[1] == "leases" && rest[2] == "-l":
		return func(ctx context.Context) error { return k.deleteLeases(ctx, ns, rest[3]) }, nil
	}
	return nil, fmt.Errorf("the guide's walk does not know the command %q", args)
}

// applyOrDelete is `kubectl apply|delete -k DIR|-f FILE`.
func (k Kubectl) applyOrDelete(ctx context.Context, verb, flag, path, ns string) error {
	read := Kustomize
	if flag == "-f" {
		read = manifests
	}
	objs, err := read(filepath.Join(k.Dir, path))
	if err != nil {
		return err
	}
	if verb == "delete" {
		return Delete(ctx, k.Config, objs, ns)
	}
	return Apply(ctx, k.Config, objs, ns, "kubectl")
}

func (k Kubectl) createNamespace(ctx context.Context, name string) error {
	cs, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	return err
}

// createSecret is `kubectl create secret generic NAME --from-file=KEY=PATH`.
func (k Kubectl) createSecret(ctx context.Context, ns, name string, flags []string) error {
	if ns == "" {
		ns = "default"
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{}}
	for _, f := range flags {
		spec, ok := strings.CutPrefix(f, "--from-file=")
		if !ok {
			return fmt.Errorf("kubectl create secret generic: the walk does not know the flag %q", f)
		}
		key, path, ok := strings.Cut(spec, "=")
		if !ok {
			key, path = filepath.Base(spec), spec
		}
		b, err := os.ReadFile(filepath.Join(k.Dir, path))
		if err != nil {
			return err
		}
		s.Data[key] = b
	}
	cs, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		return err
	}
	_, err = cs.CoreV1().Secrets(ns).Create(ctx, s, metav1.CreateOptions{})
	return err
}

// manifests reads the objects of a YAML file, as `kubectl apply -f FILE`
// does; a file of none is an error, as kubectl's "no objects passed".
func manifests(path string) ([]*unstructured.Unstructured, error) {
	out, err := kubetest.ReadManifests(path)
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("%s: no objects", path)
	}
	return out, err
}

// Kustomize renders a kustomization folder on disk with the kustomize
// library, plugins off, as `kubectl apply -k` and `kustomize build` do.
func Kustomize(dir string) ([]*unstructured.Unstructured, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	opts := krusty.MakeDefaultOptions()
	opts.PluginConfig = types.DisabledPluginConfig()
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), abs)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, r := range m.Resources() {
		data, err := r.Map()
		if err != nil {
			return nil, err
		}
		out = append(out, &unstructured.Unstructured{Object: data})
	}
	return out, nil
}

// resolver finds the API resource of an object.
type resolver struct {
	mapper meta.RESTMapper
	dyn    dynamic.Interface
}

func newResolver(cfg *rest.Config) (*resolver, error) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &resolver{mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), dyn: dyn}, nil
}

// resource is where o lives; a namespaced object that names no namespace
// is put in ns (default when empty), as kubectl -n does.
func (r *resolver) resource(o *unstructured.Unstructured, ns string) (dynamic.ResourceInterface, error) {
	gvk := o.GroupVersionKind()
	m, err := r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", gvk.Kind, o.GetName(), err)
	}
	if m.Scope.Name() != meta.RESTScopeNameNamespace {
		return r.dyn.Resource(m.Resource), nil
	}
	if o.GetNamespace() == "" {
		if ns == "" {
			ns = "default"
		}
		o.SetNamespace(ns)
	}
	return r.dyn.Resource(m.Resource).Namespace(o.GetNamespace()), nil
}

// Apply server-side applies objects in order, namespaces first, with the
// namespace ns for namespaced objects that name none (as kubectl -n does),
// as field manager manager.
func Apply(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured, ns, manager string) error {
	res, err := newResolver(cfg)
	if err != nil {
		return err
	}
	ordered := append([]*unstructured.Unstructured{}, objs...)
	sort.SliceStable(ordered, func(i, j int) bool {
		return ordered[i].GetKind() == "Namespace" && ordered[j].GetKind() != "Namespace"
	})
	for _, o := range ordered {
		ri, err := res.resource(o, ns)
		if err != nil {
			return err
		}
		if _, err := ri.Apply(ctx, o.GetName(), o, metav1.ApplyOptions{FieldManager: manager, Force: true}); err != nil {
			if apierrors.IsAlreadyExists(err) && o.GetKind() == "Namespace" {
				continue
			}
			return fmt.Errorf("apply %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}
