package kubetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallCRDs creates every CRD in the .yaml files of dir and waits until
// each is established: a controller's watches fail to start on a kind the
// apiserver does not know yet.
func InstallCRDs(ctx context.Context, dyn dynamic.Interface, dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".yaml") {
			continue
		}
		objs, err := ReadManifests(filepath.Join(dir, e.Name()))
		if err != nil {
			return err
		}
		for _, u := range objs {
			if _, err := dyn.Resource(crdGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("create CRD %s: %w", u.GetName(), err)
			}
			names = append(names, u.GetName())
		}
	}
	for _, n := range names {
		err := Poll(30*time.Second, func() (bool, error) {
			u, err := dyn.Resource(crdGVR).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, fmt.Errorf("CRD %s not established", n)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// Poll calls cond until it returns true or limit passes; the error is the
// last one cond gave.
func Poll(limit time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(limit)
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = errors.New("condition not met")
			}
			return fmt.Errorf("after %s: %w", limit, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// MinimalCRD is a CustomResourceDefinition that accepts any object of the
// kind, with a status subresource: enough for a test that needs Flux's or
// Argo CD's objects to exist and say something, without their controllers.
func MinimalCRD(group, version, kind, plural string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{"group": group, "scope": "Namespaced",
			"names": map[string]any{"kind": kind, "listKind": kind + "List", "plural": plural, "singular": strings.ToLower(kind)},
			"versions": []any{map[string]any{"name": version, "served": true, "storage": true, "subresources": map[string]any{"status": map[string]any{}},
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
	}}
}

// CreateWithStatus creates obj (retrying while its CRD is not served yet)
// and then writes its status.
func CreateWithStatus(tb testing.TB, dyn dynamic.Interface, gvr schema.GroupVersionResource, obj map[string]any) {
	tb.Helper()
	u := &unstructured.Unstructured{Object: obj}
	status, hasStatus := obj["status"]
	var created *unstructured.Unstructured
	var err error
	for i := 0; i < 50; i++ {
		if created, err = dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(context.Background(), u, metav1.CreateOptions{}); err == nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		tb.Fatal(err)
	}
	if hasStatus {
		created.Object["status"] = status
		if _, err := dyn.Resource(gvr).Namespace(u.GetNamespace()).UpdateStatus(context.Background(), created, metav1.UpdateOptions{}); err != nil {
			tb.Fatal(err)
		}
	}
}

// ReadManifests reads the objects of a YAML (or JSON) file of manifests,
// as kubectl apply -f reads one: a document each, documents of nothing but
// comments skipped.
func ReadManifests(path string) ([]*unstructured.Unstructured, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(obj) > 0 {
			out = append(out, &unstructured.Unstructured{Object: obj})
		}
	}
}
