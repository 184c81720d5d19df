package attribution

import (
	"maps"
	"slices"
	"strings"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/cluster"
)

// Attribution says who changed each edit's field in the cluster: the field
// managers that own it in the live object read (cluster.WritersOf), how
// they last wrote and when, and, with the cluster's audit log, the user
// behind that write. Built once per poll from the objects it listed: no
// request. The pull request's rows, its commit, the check run's table and
// annotations, the dashboard and `plan -o markdown` all read it.
type Attribution struct {
	objs    map[analyzer.ObjectRef]cluster.Object
	audit   *cluster.AuditTrail
	parsed  map[analyzer.ObjectRef]*cluster.ObjectWriters // each object's managedFields, parsed once
	writers map[editKey][]cluster.Writer
}

type editKey struct {
	obj   analyzer.ObjectRef
	field string
}

// New reads who changed what from objs; audit, when not nil,
// names the users.
func New(objs []cluster.Object, audit *cluster.AuditTrail) *Attribution {
	index := make(map[analyzer.ObjectRef]cluster.Object, len(objs))
	for _, o := range objs {
		index[analyzer.RefOf(o.Object)] = o
	}
	return &Attribution{objs: index, audit: audit, parsed: map[analyzer.ObjectRef]*cluster.ObjectWriters{}, writers: map[editKey][]cluster.Writer{}}
}

// Writers are the managers that own e's field, each with its user where
// the audit log names one; none when the object came without
// managedFields.
func (a *Attribution) Writers(e analyzer.Edit) []cluster.Writer {
	if a == nil {
		return nil
	}
	k := editKey{e.Object, e.Field}
	if ws, ok := a.writers[k]; ok {
		return ws
	}
	var ws []cluster.Writer
	if o, ok := a.objs[e.Object]; ok {
		owners, parsed := a.parsed[e.Object]
		if !parsed {
			// Unreadable managedFields (nil: nobody named): the plan
			// itself said so.
			owners, _ = cluster.WritersOf(o)
			a.parsed[e.Object] = owners
		}
		if got, err := owners.Of(e.Field); err == nil {
			ws = a.audit.Attribute(o, got)
		}
	}
	a.writers[k] = ws
	return ws
}

// Text says who changed e's field in one line; "" when unknown.
func (a *Attribution) Text(e analyzer.Edit) string {
	return cluster.WritersText(a.Writers(e))
}

// Authors are the distinct cluster users the audit log names, each alone,
// as the maker of a write behind plan's edits, sorted (an impersonated
// user counts as the one acted as). A write several users might have made
// names none of them: co-authorship is a claim.
func (a *Attribution) Authors(plan *analyzer.Plan) []string {
	if a == nil || plan == nil {
		return nil
	}
	seen := map[string]bool{}
	for _, e := range plan.Edits {
		for _, w := range a.Writers(e) {
			if len(w.By) == 1 {
				seen[actingUser(w.By[0])] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// actingUser is whom a write acted as.
func actingUser(by cluster.Actor) string {
	if by.As != "" {
		return by.As
	}
	return by.User
}

// makers are who made e, in a word each: the users the audit log names,
// else the field managers; none when unknown.
func (a *Attribution) makers(e analyzer.Edit) []string {
	users, managers := map[string]bool{}, map[string]bool{}
	for _, w := range a.Writers(e) {
		managers[w.Manager] = true
		for _, by := range w.By {
			users[actingUser(by)] = true
		}
	}
	if len(users) > 0 {
		return slices.Sorted(maps.Keys(users))
	}
	return slices.Sorted(maps.Keys(managers))
}

// Makers are who made plan's edits (makers), distinct and sorted: the
// dashboard's short answer to "who".
func (a *Attribution) Makers(plan *analyzer.Plan) []string {
	if a == nil || plan == nil {
		return nil
	}
	seen := map[string]bool{}
	for _, e := range plan.Edits {
		for _, m := range a.makers(e) {
			seen[m] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// Groups lists plan's edits by who made them, when more than one maker
// is known; nil when one maker (or none) made them all: the rows say it
// already.
func (a *Attribution) Groups(plan *analyzer.Plan) []report.MakerGroup {
	by := map[string][]analyzer.Edit{}
	for _, e := range plan.Edits {
		who := strings.Join(a.makers(e), ", ")
		if who == "" {
			who = "not recorded (no managedFields)"
		}
		by[who] = append(by[who], e)
	}
	if len(by) < 2 {
		return nil
	}
	var out []report.MakerGroup
	for _, who := range slices.Sorted(maps.Keys(by)) {
		out = append(out, report.MakerGroup{Who: who, Edits: by[who]})
	}
	return out
}
