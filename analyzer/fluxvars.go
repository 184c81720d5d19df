package analyzer

// varPlan is the substitution variables a plan changes, and where.
type varPlan struct {
	routes []*varRoute
}

// varRoute is one variable given a new value where it is set.
type varRoute struct {
	Name  string
	Value string
}

func (v *varPlan) values() map[string]string {
	out := map[string]string{}
	for _, r := range v.routes {
		out[r.Name] = r.Value
	}
	return out
}
