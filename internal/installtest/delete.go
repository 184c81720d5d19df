package installtest

import (
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Delete deletes objects as `kubectl delete -k` does: each one, in
// reverse order with namespaces last, namespaced objects that name none in
// ns. An object that is not there is an error, as kubectl makes it.
func Delete(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured, ns string) error {
	res, err := newResolver(cfg)
	if err != nil {
		return err
	}
	ordered := slices.Clone(objs)
	slices.Reverse(ordered)
	slices.SortStableFunc(ordered, func(a, b *unstructured.Unstructured) int {
		return boolInt(a.GetKind() == "Namespace") - boolInt(b.GetKind() == "Namespace")
	})
	for _, o := range ordered {
		ri, err := res.resource(o, ns)
		if err != nil {
			return err
		}
		if err := ri.Delete(ctx, o.GetName(), metav1.DeleteOptions{}); err != nil {
			return fmt.Errorf("delete %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// deleteNamed is `kubectl [-n NS] delete namespace|secret NAME`.
func (k Kubectl) deleteNamed(ctx context.Context, ns, kind, name string) error {
	cs, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		return err
	}
	if kind == "namespace" {
		return cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	}
	if ns == "" {
		ns = "default"
	}
	return cs.CoreV1().Secrets(ns).Delete(ctx, name, metav1.DeleteOptions{})
}

// deleteLeases is `kubectl -n NS delete leases -l SELECTOR`.
func (k Kubectl) deleteLeases(ctx context.Context, ns, selector string) error {
	cs, err := kubernetes.NewForConfig(k.Config)
	if err != nil {
		return err
	}
	if ns == "" {
		ns = "default"
	}
	return cs.CoordinationV1().Leases(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: selector})
}

// Present names the objects of objs that exist, as "Kind namespace/name";
// namespaced objects that name no namespace are looked for in ns.
func Present(ctx context.Context, cfg *rest.Config, objs []*unstructured.Unstructured, ns string) ([]string, error) {
	res, err := newResolver(cfg)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, o := range objs {
		o = o.DeepCopy()
		ri, err := res.resource(o, ns)
		if err != nil {
			return nil, err
		}
		_, err = ri.Get(ctx, o.GetName(), metav1.GetOptions{})
		switch {
		case err == nil:
			out = append(out, fmt.Sprintf("%s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName()))
		case !apierrors.IsNotFound(err):
			return nil, err
		}
	}
	return out, nil
}
