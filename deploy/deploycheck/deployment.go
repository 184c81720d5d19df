package deploycheck

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// checkDeployment: replicas, a locked-down pod, probes, resources, a pinned
// image and the downward-API lease identity.
func (e Expect) checkDeployment(objs []*Object) []string {
	o, d, ps := e.theDeployment(objs)
	if ps != nil {
		return ps
	}
	add := func(format string, args ...any) {
		ps = append(ps, fmt.Sprintf("%s: ", o)+fmt.Sprintf(format, args...))
	}
	spec := d.Spec.Template.Spec
	switch {
	case e.Replicas > 0 && (d.Spec.Replicas == nil || *d.Spec.Replicas != e.Replicas):
		add("replicas %v, want %d", ptrString(d.Spec.Replicas), e.Replicas)
	case e.Replicas == 0 && (d.Spec.Replicas == nil || *d.Spec.Replicas < 2):
		add("want at least 2 replicas (they share targets through Leases)")
	}
	if spec.AutomountServiceAccountToken != nil && !*spec.AutomountServiceAccountToken {
		add("automountServiceAccountToken is false; inCluster needs the token")
	}
	pod := spec.SecurityContext
	if pod == nil {
		pod = &securityContext{}
	}
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		cadd := func(format string, args ...any) { add("container %q: "+format, append([]any{c.Name}, args...)...) }
		sc := c.SecurityContext
		if sc == nil {
			sc = &securityContext{}
		}
		// A container setting wins over the pod's.
		nonRoot, uid := pod.RunAsNonRoot, pod.RunAsUser
		if sc.RunAsNonRoot != nil {
			nonRoot = sc.RunAsNonRoot
		}
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		if nonRoot == nil || !*nonRoot {
			cadd("runAsNonRoot is not true")
		}
		if uid == nil {
			cadd("runAsUser is not set (want 65532, the distroless nonroot user)")
		} else if *uid == 0 {
			cadd("runAsUser 0 is root")
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			cadd("readOnlyRootFilesystem is not true")
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			cadd("allowPrivilegeEscalation is not false")
		}
		if sc.Privileged != nil && *sc.Privileged {
			cadd("privileged is true")
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			cadd("capabilities.drop does not contain ALL")
		} else if len(sc.Capabilities.Add) > 0 {
			cadd("capabilities.add %q; driftback needs none", sc.Capabilities.Add)
		}
		seccomp := pod.SeccompProfile
		if sc.SeccompProfile != nil {
			seccomp = sc.SeccompProfile
		}
		if seccomp == nil || seccomp.Type != "RuntimeDefault" {
			cadd("seccompProfile is not RuntimeDefault")
		}
		for _, res := range []string{"cpu", "memory"} {
			if c.Resources.Requests[res] == "" {
				cadd("resources.requests has no %s", res)
			}
			if c.Resources.Limits[res] == "" {
				cadd("resources.limits has no %s", res)
			}
		}
		if p := imageProblem(c.Image); p != "" {
			cadd("%s", p)
		}
	}
	c := spec.Containers[0]
	cadd := func(format string, args ...any) { add("container %q: "+format, append([]any{c.Name}, args...)...) }
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["http"] != 8080 {
		cadd("want containerPort 8080 named http, got %v", c.Ports)
	}
	for _, pr := range []struct {
		field, path string
		p           *probe
	}{{"livenessProbe", "/healthz", c.LivenessProbe}, {"readinessProbe", "/readyz", c.ReadinessProbe}} {
		switch {
		case pr.p == nil || pr.p.HTTPGet == nil:
			cadd("no %s with httpGet %s", pr.field, pr.path)
		case pr.p.HTTPGet.Path != pr.path:
			cadd("%s checks %q, want %s", pr.field, pr.p.HTTPGet.Path, pr.path)
		case fmt.Sprint(pr.p.HTTPGet.Port) != "http" && fmt.Sprint(pr.p.HTTPGet.Port) != "8080":
			cadd("%s uses port %v, want http", pr.field, pr.p.HTTPGet.Port)
		}
	}
	fields := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			fields[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	for name, path := range map[string]string{"POD_NAME": "metadata.name", "POD_NAMESPACE": "metadata.namespace"} {
		if fields[name] != path {
			cadd("env %s should come from the downward API field %s (the Lease holder identity)", name, path)
		}
	}
	memLimit, wholeLimit := false, false
	for _, e := range c.Env {
		if e.ValueFrom == nil || e.ValueFrom.ResourceFieldRef == nil {
			continue
		}
		r := e.ValueFrom.ResourceFieldRef
		switch e.Name {
		case "DRIFTBACK_CONTAINER_MEMORY":
			memLimit = r.Resource == "limits.memory" && (r.Divisor == "" || r.Divisor == "1")
		case "GOMEMLIMIT":
			wholeLimit = r.Resource == "limits.memory"
		}
	}
	if wholeLimit {
		cadd("env GOMEMLIMIT from limits.memory gives the Go runtime the whole container, leaving no room for what its limit does not count; set DRIFTBACK_CONTAINER_MEMORY instead (driftback takes 85%% of it)")
	}
	if !memLimit {
		cadd("env DRIFTBACK_CONTAINER_MEMORY should come from resourceFieldRef limits.memory in bytes (the Go runtime's soft limit is set from the container's)")
	}
	if len(c.Args) == 0 || c.Args[0] != "run" {
		cadd("args %q should start with run", c.Args)
	}
	return ps
}

var digestRE = regexp.MustCompile(`@sha256:[0-9a-f]{64}$`)

// imageProblem says what is wrong with an image reference, or "".
func imageProblem(image string) string {
	if digestRE.MatchString(image) {
		return ""
	}
	if strings.Contains(image, "@") {
		return fmt.Sprintf("image %q has a malformed digest", image)
	}
	slash := strings.LastIndex(image, "/")
	colon := strings.LastIndex(image, ":")
	if colon <= slash {
		return fmt.Sprintf("image %q has no tag or digest, which means :latest; pin a release", image)
	}
	if tag := image[colon+1:]; tag == "" || tag == "latest" {
		return fmt.Sprintf("image %q is not pinned; use a release tag or a digest", image)
	}
	return ""
}

func ptrString(p *int) string {
	if p == nil {
		return "unset"
	}
	return fmt.Sprint(*p)
}
