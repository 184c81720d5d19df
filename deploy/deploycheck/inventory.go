package deploycheck

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/kubernetes/scheme"
)

// checkObjects: the installation has what it should, namespaced objects
// are in its namespace, and no Secret is shipped but the key's, when the
// installation is told to create it.
func (e Expect) checkObjects(objs []*Object) []string {
	var ps []string
	kinds := []string{"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap", "Deployment", "Service", "PodDisruptionBudget"}
	if e.OwnsNamespace {
		kinds = append([]string{"Namespace"}, kinds...)
	}
	for _, kind := range kinds {
		if len(find(objs, kind)) == 0 {
			ps = append(ps, fmt.Sprintf("the installation has no %s", kind))
		}
	}
	if e.OwnsNamespace && lookup(objs, "Namespace", "", e.Namespace) == nil {
		ps = append(ps, fmt.Sprintf("the installation does not create Namespace %s", e.Namespace))
	}
	if !e.OwnsNamespace {
		for _, o := range find(objs, "Namespace") {
			ps = append(ps, fmt.Sprintf("%s: the installation goes into a namespace that exists; it must not create one", o))
		}
	}
	if e.ShipsKeySecret && lookup(objs, "Secret", e.Namespace, e.KeySecret) == nil {
		ps = append(ps, fmt.Sprintf("the installation was given the key but has no Secret %s/%s", e.Namespace, e.KeySecret))
	}
	clusterScoped := map[string]bool{"Namespace": true, "ClusterRole": true, "ClusterRoleBinding": true}
	for _, o := range objs {
		switch {
		case o.Kind == "Secret" && !(e.ShipsKeySecret && o.Name == e.KeySecret):
			ps = append(ps, fmt.Sprintf("%s: must not be shipped; users create %s themselves", o, e.KeySecret))
		case clusterScoped[o.Kind] && o.Namespace != "":
			ps = append(ps, fmt.Sprintf("%s: a cluster-scoped object has a namespace", o))
		case !clusterScoped[o.Kind] && o.Namespace != e.Namespace:
			ps = append(ps, fmt.Sprintf("%s: want namespace %s", o, e.Namespace))
		}
	}
	for _, o := range find(objs, "PodDisruptionBudget") {
		var pdb struct {
			Spec struct {
				MinAvailable any `json:"minAvailable"`
			} `json:"spec"`
		}
		if err := o.decode(&pdb); err != nil {
			ps = append(ps, fmt.Sprintf("%s: %v", o, err))
		} else if fmt.Sprint(pdb.Spec.MinAvailable) != "1" {
			ps = append(ps, fmt.Sprintf("%s: minAvailable is %v, want 1", o, pdb.Spec.MinAvailable))
		}
	}
	return ps
}

// checkAPITypes decodes every object strictly into its Kubernetes API type,
// so a misspelt or misplaced field is an error instead of silently
// dropped by the API server.
func (e Expect) checkAPITypes(objs []*Object) []string {
	dec := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict).UniversalDeserializer()
	var ps []string
	for _, o := range objs {
		_, _, err := dec.Decode(o.json, nil, nil)
		switch {
		case err == nil:
		case runtime.IsNotRegisteredError(err) && monitoringKinds[o.Kind] != nil:
			if err := strictDecode(o.json, monitoringKinds[o.Kind]()); err != nil {
				ps = append(ps, fmt.Sprintf("%s: %v", o, err))
			}
		case runtime.IsNotRegisteredError(err):
			ps = append(ps, fmt.Sprintf("%s: not a built-in kind, cannot check its fields: %v", o, err))
		default:
			ps = append(ps, fmt.Sprintf("%s: %v", o, err))
		}
	}
	return ps
}
