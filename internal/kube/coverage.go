package kube

// Coverage says what one read of a cluster covered, so that a rendered
// object missing from the live objects can be told apart: gone from the
// cluster (a finding), never read (the read was incomplete: no verdict at
// all), or not read by design (cluster-scoped, or outside the target's
// kinds). Kinds are written as the config writes them: Kind for the core
// group, Kind.group otherwise (KindKey).
type Coverage struct {
	// Listed holds the kinds listed in every namespace of the read.
	Listed map[string]bool
	// Skipped holds the kinds not read by design.
	Skipped map[string]bool
	// Failed says, for people, what could not be read (an API group whose
	// discovery failed); its kinds are in neither map.
	Failed []string
}

// KindKey writes a kind of a group as Coverage and the config write it.
func KindKey(group, kind string) string {
	if group == "" {
		return kind
	}
	return kind + "." + group
}
