package deploycheck

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// problemf records one problem, formatted as by fmt.Sprintf.
type problemf func(format string, args ...any)

// container prefixes each problem with the container it is about.
func (add problemf) container(name string) problemf {
	return func(format string, args ...any) { add("container %q: "+format, append([]any{name}, args...)...) }
}

// checkDeployment: replicas, a locked-down pod, probes, resources, a pinned
// image and the downward-API lease identity.
func (e Expect) checkDeployment(objs []*Object) []string {
	o, d, ps := e.theDeployment(objs)
	if ps != nil {
		return ps
	}
	var add problemf = func(format string, args ...any) {
		ps = append(ps, fmt.Sprintf("%s: ", o)+fmt.Sprintf(format, args...))
	}
	spec := d.Spec.Template.Spec
	e.checkReplicas(d.Spec.Replicas, add)
	if spec.AutomountServiceAccountToken != nil && !*spec.AutomountServiceAccountToken {
		add("automountServiceAccountToken is false; inCluster needs the token")
	}
	pod := spec.SecurityContext
	if pod == nil {
		pod = &securityContext{}
	}
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		cadd := add.container(c.Name)
		checkLockedDown(pod, c.SecurityContext, cadd)
		checkResources(c, cadd)
		if p := imageProblem(c.Image); p != "" {
			cadd("%s", p)
		}
	}
	c := spec.Containers[0]
	cadd := add.container(c.Name)
	checkServing(c, cadd)
	checkLeaseIdentity(c.Env, cadd)
	checkMemoryLimit(c.Env, cadd)
	if len(c.Args) == 0 || c.Args[0] != "run" {
		cadd("args %q should start with run", c.Args)
	}
	return ps
}

// checkReplicas: exactly e.Replicas, or at least 2 when that is 0.
func (e Expect) checkReplicas(replicas *int, add problemf) {
	switch {
	case e.Replicas > 0 && (replicas == nil || *replicas != e.Replicas):
		add("replicas %v, want %d", ptrString(replicas), e.Replicas)
	case e.Replicas == 0 && (replicas == nil || *replicas < 2):
		add("want at least 2 replicas (they share targets through Leases)")
	}
}

// checkLockedDown: the container runs as a non-root user on a read-only
// root filesystem, without privileges or capabilities, under the runtime's
// seccomp profile. A container setting (sc) wins over the pod's.
func checkLockedDown(pod, sc *securityContext, add problemf) {
	if sc == nil {
		sc = &securityContext{}
	}
	nonRoot, uid := pod.RunAsNonRoot, pod.RunAsUser
	if sc.RunAsNonRoot != nil {
		nonRoot = sc.RunAsNonRoot
	}
	if sc.RunAsUser != nil {
		uid = sc.RunAsUser
	}
	if nonRoot == nil || !*nonRoot {
		add("runAsNonRoot is not true")
	}
	if uid == nil {
		add("runAsUser is not set (want 65532, the distroless nonroot user)")
	} else if *uid == 0 {
		add("runAsUser 0 is root")
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		add("readOnlyRootFilesystem is not true")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		add("allowPrivilegeEscalation is not false")
	}
	if sc.Privileged != nil && *sc.Privileged {
		add("privileged is true")
	}
	if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		add("capabilities.drop does not contain ALL")
	} else if len(sc.Capabilities.Add) > 0 {
		add("capabilities.add %q; driftback needs none", sc.Capabilities.Add)
	}
	seccomp := pod.SeccompProfile
	if sc.SeccompProfile != nil {
		seccomp = sc.SeccompProfile
	}
	if seccomp == nil || seccomp.Type != "RuntimeDefault" {
		add("seccompProfile is not RuntimeDefault")
	}
}

// checkResources: cpu and memory have both a request and a limit.
func checkResources(c container, add problemf) {
	for _, res := range []string{"cpu", "memory"} {
		if c.Resources.Requests[res] == "" {
			add("resources.requests has no %s", res)
		}
		if c.Resources.Limits[res] == "" {
			add("resources.limits has no %s", res)
		}
	}
}

// checkServing: the container serves on port 8080, named http, and its
// liveness and readiness probes ask that port for /healthz and /readyz.
func checkServing(c container, add problemf) {
	ports := map[string]int{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["http"] != 8080 {
		add("want containerPort 8080 named http, got %v", c.Ports)
	}
	for _, pr := range []struct {
		field, path string
		p           *probe
	}{{"livenessProbe", "/healthz", c.LivenessProbe}, {"readinessProbe", "/readyz", c.ReadinessProbe}} {
		switch {
		case pr.p == nil || pr.p.HTTPGet == nil:
			add("no %s with httpGet %s", pr.field, pr.path)
		case pr.p.HTTPGet.Path != pr.path:
			add("%s checks %q, want %s", pr.field, pr.p.HTTPGet.Path, pr.path)
		case fmt.Sprint(pr.p.HTTPGet.Port) != "http" && fmt.Sprint(pr.p.HTTPGet.Port) != "8080":
			add("%s uses port %v, want http", pr.field, pr.p.HTTPGet.Port)
		}
	}
}

// checkLeaseIdentity: POD_NAME and POD_NAMESPACE come from the downward
// API, since the replicas hold Leases under that identity.
func checkLeaseIdentity(env []envVar, add problemf) {
	fields := map[string]string{}
	for _, e := range env {
		if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
			fields[e.Name] = e.ValueFrom.FieldRef.FieldPath
		}
	}
	// A list, not a map: the problems come out in the same order every run.
	for _, want := range [...]struct{ name, path string }{{"POD_NAME", "metadata.name"}, {"POD_NAMESPACE", "metadata.namespace"}} {
		if fields[want.name] != want.path {
			add("env %s should come from the downward API field %s (the Lease holder identity)", want.name, want.path)
		}
	}
}

// checkMemoryLimit: the container's memory limit reaches driftback through
// DRIFTBACK_CONTAINER_MEMORY, not as a GOMEMLIMIT of the whole limit.
func checkMemoryLimit(env []envVar, add problemf) {
	memLimit, wholeLimit := false, false
	for _, e := range env {
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
		add("env GOMEMLIMIT from limits.memory gives the Go runtime the whole container, leaving no room for what its limit does not count; set DRIFTBACK_CONTAINER_MEMORY instead (driftback takes 85%% of it)")
	}
	if !memLimit {
		add("env DRIFTBACK_CONTAINER_MEMORY should come from resourceFieldRef limits.memory in bytes (the Go runtime's soft limit is set from the container's)")
	}
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
