package deploycheck

import "fmt"

const nameLabel = "app.kubernetes.io/name"

// checkLabels: every object, and the pod template, carries the name label.
func (e Expect) checkLabels(objs []*Object) []string {
	var ps []string
	for _, o := range objs {
		if o.Labels[nameLabel] != e.Name {
			ps = append(ps, fmt.Sprintf("%s: label %s is %q, want %q", o, nameLabel, o.Labels[nameLabel], e.Name))
		}
	}
	if o, d, p := e.theDeployment(objs); p != nil {
		ps = append(ps, p...)
	} else if d.Spec.Template.Metadata.Labels[nameLabel] != e.Name {
		ps = append(ps, fmt.Sprintf("%s: the pod template has no label %s: %s", o, nameLabel, e.Name))
	}
	return ps
}

// checkSelectors: the Deployment, Service and PodDisruptionBudget select
// the Deployment's pods.
func (e Expect) checkSelectors(objs []*Object) []string {
	o, d, ps := e.theDeployment(objs)
	if ps != nil {
		return ps
	}
	pod := d.Spec.Template.Metadata.Labels
	matches := func(sel map[string]string) bool {
		if len(sel) == 0 {
			return false
		}
		for k, v := range sel {
			if pod[k] != v {
				return false
			}
		}
		return true
	}
	if !matches(d.Spec.Selector.MatchLabels) {
		ps = append(ps, fmt.Sprintf("%s: selector %v does not match its pod labels %v", o, d.Spec.Selector.MatchLabels, pod))
	}
	for _, s := range find(objs, "Service") {
		var svc struct {
			Spec struct {
				Selector map[string]string `json:"selector"`
			} `json:"spec"`
		}
		if err := s.decode(&svc); err != nil {
			ps = append(ps, fmt.Sprintf("%s: %v", s, err))
		} else if !matches(svc.Spec.Selector) {
			ps = append(ps, fmt.Sprintf("%s: selector %v does not match the pods of %s (%v)", s, svc.Spec.Selector, o, pod))
		}
	}
	for _, p := range find(objs, "PodDisruptionBudget") {
		var pdb struct {
			Spec struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
			} `json:"spec"`
		}
		if err := p.decode(&pdb); err != nil {
			ps = append(ps, fmt.Sprintf("%s: %v", p, err))
		} else if !matches(pdb.Spec.Selector.MatchLabels) {
			ps = append(ps, fmt.Sprintf("%s: selector %v does not match the pods of %s (%v)", p, pdb.Spec.Selector.MatchLabels, o, pod))
		}
	}
	return ps
}
