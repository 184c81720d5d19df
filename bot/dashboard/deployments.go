package dashboard

import (
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/driftback/driftback/bot/app"
)

// Two deployments of the App at one instance (two clusters, each with its
// own config) find the same dashboard by its block. Each writing only the
// rows of its own config's targets would take the other's rows out at
// every round, and the other would put them back: a write each round for
// both. So a row says which deployment wrote it, and a deployment keeps the
// rows of another as they are, as replicas of one deployment keep each
// other's. A deployment that is gone (moved, uninstalled) must not leave
// its rows forever: while the dashboard is shared, each deployment notes in
// the block when it last ran (to the hour, renewed twice a day: at most two
// writes a day), and the rows of one not heard from for app.DeploymentHold
// are dropped, as its pull requests pass to the other. A dashboard only one
// deployment writes carries no such note, so it is never written for time
// alone. A process that cannot tell its deployment ("") writes as before:
// every row not of its config's targets goes.

// seenEvery is how often a deployment renews its note in a shared
// dashboard: well within app.DeploymentHold.
const seenEvery = 12 * time.Hour

// mergeState is the dashboard's state after this deployment's replica
// writes its rows (mine, of the targets names of its config) into old. me
// is this deployment ("" when it cannot tell); now is the replica's clock.
func mergeState(old dashState, mine map[string]dashRow, names []string, me string, now time.Time) dashState {
	var own, others []dashRow
	for _, r := range old.Rows {
		if isOther(r, me) {
			others = append(others, r)
		} else {
			own = append(own, r)
		}
	}
	stamped := make(map[string]dashRow, len(mine))
	for n, r := range mine {
		r.Deployment = me
		stamped[n] = r
	}
	rows := mergeRows(own, stamped, names)
	for i := range rows {
		rows[i].Deployment = me // rows of this deployment's other replicas, and those no deployment stamped
	}
	seen := map[string]string{}
	for _, r := range others {
		at, ok := seen[r.Deployment]
		if !ok {
			at = old.Seen[r.Deployment]
			if _, err := time.Parse(time.RFC3339, at); err != nil {
				at = stamp(now) // first met now: its day starts here
			}
		}
		if t, _ := time.Parse(time.RFC3339, at); now.Sub(t) >= app.DeploymentHold {
			continue
		}
		seen[r.Deployment] = at
		rows = append(rows, r)
	}
	if len(seen) == 0 {
		seen = nil
	} else {
		at := old.Seen[me]
		if t, err := time.Parse(time.RFC3339, at); err != nil || now.Sub(t) >= seenEvery {
			at = stamp(now)
		}
		seen[me] = at
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Target != rows[j].Target {
			return rows[i].Target < rows[j].Target
		}
		return rows[i].Deployment < rows[j].Deployment
	})
	return dashState{Instance: old.Instance, Rows: rows, Seen: seen}
}

// isOther reports whether r is another deployment's row, for deployment
// me; to one that cannot tell its deployment, none is.
func isOther(r dashRow, me string) bool {
	return me != "" && r.Deployment != "" && r.Deployment != me
}

// sharedWith reports whether rows hold another deployment's, for me.
func sharedWith(rows []dashRow, me string) bool {
	return slices.ContainsFunc(rows, func(r dashRow) bool { return isOther(r, me) })
}

// deploymentsOf are the deployments that wrote rows ("" among them for
// rows none stamped).
func deploymentsOf(rows []dashRow) []string {
	set := map[string]bool{}
	for _, r := range rows {
		set[r.Deployment] = true
	}
	return slices.Sorted(maps.Keys(set))
}

// sameState reports whether a and b say the same: rows and notes.
func sameState(a, b dashState) bool {
	return sameRows(a.Rows, b.Rows) && maps.Equal(a.Seen, b.Seen)
}

// stamp is a note's time: the hour, so that the note changes only when
// renewed.
func stamp(now time.Time) string { return now.UTC().Truncate(time.Hour).Format(time.RFC3339) }

// targetCell names the row's target, and in a dashboard deployments
// share, the deployment whose target it is.
func targetCell(r dashRow, shared bool) string {
	if shared && r.Deployment != "" {
		return "`" + r.Target + "` (`" + r.Deployment + "`)"
	}
	return "`" + r.Target + "`"
}
