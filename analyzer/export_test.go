package analyzer

import (
	"github.com/driftback/driftback/internal/kube"
)

// AnalyzeForcingDye is Analyze with the dyed build run whether or not
// dyeCanRoute thinks it can route anything, for tests outside the package.
func AnalyzeForcingDye(in Input) (*Plan, error) {
	return NewSnapshot(in.Repo, nil).PlanForcingDye(in.Root, in.Live, in.Options)
}

// PlanForcingDye is Plan with the dyed build forced, as AnalyzeForcingDye.
func (s *Snapshot) PlanForcingDye(root string, live []kube.LiveObject, opts Options) (*Plan, error) {
	return s.plan(root, live, opts, true)
}
