package deploycheck

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

type policyRule struct {
	APIGroups       []string `json:"apiGroups"`
	Resources       []string `json:"resources"`
	ResourceNames   []string `json:"resourceNames"`
	NonResourceURLs []string `json:"nonResourceURLs"`
	Verbs           []string `json:"verbs"`
}

func (r policyRule) String() string {
	if len(r.NonResourceURLs) > 0 {
		return fmt.Sprintf("nonResourceURLs %q verbs %q", r.NonResourceURLs, r.Verbs)
	}
	return fmt.Sprintf("apiGroups %q resources %q verbs %q", r.APIGroups, r.Resources, r.Verbs)
}

// covers says whether the rule applies to resource in group.
func (r policyRule) covers(group, resource string) bool {
	groupOK := slices.Contains(r.APIGroups, "*") || slices.Contains(r.APIGroups, group)
	resOK := slices.ContainsFunc(r.Resources, func(s string) bool {
		return s == "*" || s == resource || strings.HasPrefix(s, resource+"/")
	})
	return groupOK && resOK
}

type role struct {
	Rules           []policyRule    `json:"rules"`
	AggregationRule json.RawMessage `json:"aggregationRule"`
}

// readVerbs are the verbs driftback's reads use: it lists, and keeps the
// kinds its polls list across the cluster by watches, so a ClusterRole
// grants these and no other.
var readVerbs = []string{"get", "list", "watch"}

// readOnly are the verbs of the objects driftback reads without watching.
var readOnly = []string{"get", "list"}

// grants says whether some rule allows verb on resource in group.
func grants(rules []policyRule, group, resource, verb string) bool {
	for _, r := range rules {
		if r.covers(group, resource) && len(r.ResourceNames) == 0 && (slices.Contains(r.Verbs, verb) || slices.Contains(r.Verbs, "*")) {
			return true
		}
	}
	return false
}

// checkRBAC: ClusterRoles get, list and watch only (what the code uses); Roles write Leases only; no rule uses
// the verb "*" or writes Secrets; and what driftback needs is granted.
func (e Expect) checkRBAC(objs []*Object) []string {
	var ps []string
	for _, o := range objs {
		if o.Kind != "ClusterRole" && o.Kind != "Role" {
			continue
		}
		var r role
		if err := o.decode(&r); err != nil {
			ps = append(ps, fmt.Sprintf("%s: %v", o, err))
			continue
		}
		if len(r.AggregationRule) > 0 && string(r.AggregationRule) != "null" {
			ps = append(ps, fmt.Sprintf("%s: has an aggregationRule, which would pull in the rules of other ClusterRoles, write rules included", o))
		}
		for i, rule := range r.Rules {
			ps = append(ps, ruleProblems(fmt.Sprintf("%s: rule %d (%s)", o, i, rule), o.Kind, rule)...)
		}
		ps = append(ps, missingGrants(o, r.Rules)...)
	}
	return ps
}

// ruleProblems checks one rule (named at) of a role of kind ClusterRole or
// Role: no verb "*", and writes only where that kind may write.
func ruleProblems(at, kind string, rule policyRule) []string {
	var ps []string
	for _, v := range rule.Verbs {
		if v == "*" {
			ps = append(ps, fmt.Sprintf(`%s: verb "*" grants every verb, writes included; list the verbs`, at))
		}
	}
	var writes []string
	for _, v := range rule.Verbs {
		if !slices.Contains(readVerbs, v) {
			writes = append(writes, v)
		}
	}
	if len(writes) == 0 {
		return ps
	}
	if kind == "ClusterRole" {
		ps = append(ps, fmt.Sprintf("%s: verbs %q are not ones driftback reads with; a ClusterRole may only get, list and watch", at, writes))
	}
	if rule.covers("", "secrets") {
		ps = append(ps, fmt.Sprintf("%s: grants %q on secrets; driftback only reads Secret metadata", at, writes))
	}
	if kind == "Role" {
		for _, g := range rule.APIGroups {
			if g != "coordination.k8s.io" {
				ps = append(ps, fmt.Sprintf("%s: verbs %q in API group %q; the only writes allowed are on coordination.k8s.io leases", at, writes, g))
			}
		}
		for _, res := range rule.Resources {
			if res != "leases" {
				ps = append(ps, fmt.Sprintf("%s: verbs %q on resource %q; the only writes allowed are on coordination.k8s.io leases", at, writes, res))
			}
		}
		if len(rule.NonResourceURLs) > 0 {
			ps = append(ps, fmt.Sprintf("%s: write verbs on non-resource URLs", at))
		}
	}
	return ps
}

// missingGrants: the ClusterRole o lets driftback read what it reads, and
// the Role o lets the replicas manage their Leases.
func missingGrants(o *Object, rules []policyRule) []string {
	var ps []string
	if o.Kind == "ClusterRole" {
		// Kinds a poll lists across the cluster are kept by watches; the
		// GitOps tools' objects and namespaces are only read.
		for _, need := range []struct {
			group, resource string
			verbs           []string
		}{
			{"", "namespaces", readOnly}, {"", "configmaps", readVerbs}, {"", "secrets", readVerbs}, {"apps", "deployments", readVerbs},
			{"kustomize.toolkit.fluxcd.io", "kustomizations", readOnly}, {"argoproj.io", "applications", readOnly},
			{"source.toolkit.fluxcd.io", "gitrepositories", readOnly},
			{"helm.toolkit.fluxcd.io", "helmreleases", readOnly}, {"source.toolkit.fluxcd.io", "helmcharts", readOnly},
		} {
			for _, v := range need.verbs {
				if !grants(rules, need.group, need.resource, v) {
					ps = append(ps, fmt.Sprintf("%s: does not grant %s on %s in API group %q, which driftback reads", o, v, need.resource, need.group))
				}
			}
		}
	}
	if o.Kind == "Role" {
		for _, v := range []string{"get", "list", "create", "update", "delete"} {
			if !grants(rules, "coordination.k8s.io", "leases", v) {
				ps = append(ps, fmt.Sprintf("%s: does not grant %s on coordination.k8s.io leases, which the replicas' membership needs", o, v))
			}
		}
	}
	return ps
}

type binding struct {
	RoleRef struct {
		APIGroup string `json:"apiGroup"`
		Kind     string `json:"kind"`
		Name     string `json:"name"`
	} `json:"roleRef"`
	Subjects []struct {
		Kind      string `json:"kind"`
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"subjects"`
}

// checkBindings: every binding binds a role of the installation to the service
// account the Deployment runs as, and to nothing else.
func (e Expect) checkBindings(objs []*Object) []string {
	var ps []string
	sa := ""
	if _, d, p := e.theDeployment(objs); p != nil {
		ps = append(ps, p...)
	} else {
		sa = d.Spec.Template.Spec.ServiceAccountName
		if sa == "" || sa == "default" {
			ps = append(ps, fmt.Sprintf("the Deployment runs as service account %q; give it its own", sa))
		}
	}
	if sa != "" && lookup(objs, "ServiceAccount", e.Namespace, sa) == nil {
		ps = append(ps, fmt.Sprintf("the Deployment's ServiceAccount %s/%s is not in the installation", e.Namespace, sa))
	}
	var bound []string
	for _, o := range objs {
		if o.Kind != "ClusterRoleBinding" && o.Kind != "RoleBinding" {
			continue
		}
		var b binding
		if err := o.decode(&b); err != nil {
			ps = append(ps, fmt.Sprintf("%s: %v", o, err))
			continue
		}
		roleNS := ""
		if b.RoleRef.Kind == "Role" {
			roleNS = o.Namespace
		}
		if o.Kind == "ClusterRoleBinding" && b.RoleRef.Kind != "ClusterRole" {
			ps = append(ps, fmt.Sprintf("%s: roleRef kind %q, want ClusterRole", o, b.RoleRef.Kind))
		}
		if b.RoleRef.APIGroup != "rbac.authorization.k8s.io" {
			ps = append(ps, fmt.Sprintf("%s: roleRef apiGroup %q, want rbac.authorization.k8s.io", o, b.RoleRef.APIGroup))
		}
		if lookup(objs, b.RoleRef.Kind, roleNS, b.RoleRef.Name) == nil {
			ps = append(ps, fmt.Sprintf("%s: roleRef %s %s is not in the installation, so its rules are not checked here", o, b.RoleRef.Kind, b.RoleRef.Name))
		}
		bound = append(bound, b.RoleRef.Kind)
		if len(b.Subjects) == 0 {
			ps = append(ps, fmt.Sprintf("%s: has no subjects", o))
		}
		for i, s := range b.Subjects {
			if s.Kind != "ServiceAccount" || s.Name != sa || s.Namespace != e.Namespace {
				ps = append(ps, fmt.Sprintf("%s: subject %d is %s %s/%s, want ServiceAccount %s/%s", o, i, s.Kind, s.Namespace, s.Name, e.Namespace, sa))
			}
		}
	}
	for _, k := range []string{"ClusterRole", "Role"} {
		if !slices.Contains(bound, k) {
			ps = append(ps, fmt.Sprintf("no binding grants a %s to the service account", k))
		}
	}
	return ps
}
