package intent

import (
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// How the API server stores what it is given (issue "propose only what a
// person changed"; measured on kube-apiserver v1.37.2 by
// realworld/applied.py): a live value in one of these forms is the
// render's own value, whoever applied it, and compares equal to it.

// droppedWhenEmpty reports whether the API server may leave out a field
// the render holds as v: an empty list, map or string, a zero number,
// false or null. Go's omitempty drops them (`volumes: []`, `value: ""`,
// `tolerations: []`), and dropping such a value changes nothing it means.
func droppedWhenEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	case int:
		return x == 0
	case int64:
		return x == 0
	case float64:
		return x == 0
	}
	return false
}

// quantityParents are the keys whose entries are resource.Quantity values
// in the built-in kinds: a container's (or a claim's) limits and
// requests, a ResourceQuota's hard, a LimitRange item's bounds, a
// RuntimeClass's overhead, a PersistentVolume's capacity.
var quantityParents = map[string]bool{
	"limits": true, "requests": true, "hard": true, "max": true, "min": true,
	"default": true, "defaultRequest": true, "maxLimitRequestRatio": true,
	"podFixed": true, "capacity": true,
}

// isQuantity reports whether p names a resource.Quantity field.
func isQuantity(p jsonvalue.Path) bool {
	n := len(p)
	if n == 0 || p[n-1].Kind != jsonvalue.KeyStep {
		return false
	}
	if p[n-1].Key == "sizeLimit" { // an emptyDir's
		return true
	}
	return n >= 2 && p[n-2].Kind == jsonvalue.KeyStep && quantityParents[p[n-2].Key]
}

// sameQuantity reports whether two values are one quantity in two forms
// (`1000m` and `1`, `0.5` and `500m`, `1.5Gi` and `1536Mi`): the API
// server stores a quantity in its canonical form.
func sameQuantity(a, b any) bool {
	qa, ok := quantity(a)
	if !ok {
		return false
	}
	qb, ok := quantity(b)
	return ok && qa.Cmp(qb) == 0
}

func quantity(v any) (resource.Quantity, bool) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case int:
		s = strconv.Itoa(x)
	case int64:
		s = strconv.FormatInt(x, 10)
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(s)
	return q, err == nil
}

// rbacGroup is what the API server fills into a binding's roleRef.apiGroup
// and a User or Group subject's apiGroup when the manifest leaves it "".
const rbacGroup = "rbac.authorization.k8s.io"

// storedAs reports whether live is how the API server stores the render's
// value ren at p, in an object of kind (Kind.group): a quantity's
// canonical form, a default filled into an empty field, base64 without
// the line breaks kustomize wraps it in.
func storedAs(kind string, p jsonvalue.Path, live, ren any) bool {
	if isQuantity(p) && sameQuantity(live, ren) {
		return true
	}
	n := len(p)
	switch kind {
	case "RoleBinding." + rbacGroup, "ClusterRoleBinding." + rbacGroup:
		if ren == "" && live == rbacGroup && n > 0 && p[n-1].Key == "apiGroup" && (p[0].Key == "roleRef" || p[0].Key == "subjects") {
			return true
		}
	case "ConfigMap":
		if n == 2 && p[0].Key == "binaryData" {
			l, lok := live.(string)
			r, rok := ren.(string)
			return lok && rok && strings.Join(strings.Fields(l), "") == strings.Join(strings.Fields(r), "")
		}
	}
	return false
}
