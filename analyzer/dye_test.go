package analyzer

import (
	"testing"

	"github.com/driftback/driftback/analyzer/dye"
)

// The dye names the routes of value inputs as plans do: a plan's route is
// the one the dye recorded.
func TestDyeRoutesAreThePlans(t *testing.T) {
	for dyed, plan := range map[string]string{
		dye.RoutePatch: RoutePatch, dye.RouteLabel: RouteLabel,
		dye.RouteGenerator: RouteGenerator, dye.RouteReplacement: RouteReplacement,
	} {
		if dyed != plan {
			t.Errorf("the dye routes %q where plans say %q", dyed, plan)
		}
	}
}
