package attribution

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
	refs    []analyzer.ObjectRef // of objs, for the refs a render names otherwise (live)
	// recalled is who the pull request's body named, by change (Recall).
	recalled map[string][]cluster.Actor
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

// live is the live object the plan paired ref with: an object rendered
// without a namespace (or a cluster-scoped one rendered with one) is read
// under another ref than the render's.
func (a *Attribution) live(ref analyzer.ObjectRef) (cluster.Object, bool) {
	if o, ok := a.objs[ref]; ok {
		return o, true
	}
	if a.refs == nil {
		a.refs = slices.Collect(maps.Keys(a.objs))
	}
	if l, ok := analyzer.LiveRefOf(ref, a.refs); ok {
		return a.objs[l], true
	}
	return cluster.Object{}, false
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
	if o, ok := a.live(e.Object); ok {
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
	for i, w := range ws {
		// What the body said of this very change stands, whatever this
		// replica's trail holds (a restart, a hand-over): no churn.
		if by, ok := a.recalled[changeKey(e, w)]; ok {
			ws[i].By, ws[i].Untold = by, false
		}
	}
	a.writers[k] = ws
	return ws
}

// Bare says who changed e's field without the users: the field managers,
// how and when, which every replica reads alike from the live object.
func (a *Attribution) Bare(e analyzer.Edit) string {
	ws := slices.Clone(a.Writers(e))
	for i := range ws {
		ws[i].By, ws[i].Untold = nil, false
	}
	return cluster.WritersText(ws)
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

// Said is who a pull request's body named for the writes behind its
// edits and refusals, kept in its hidden state: a body once written with
// a user keeps them while the change stays the same (the same field and
// values, written by the same manager's same write), so a replica whose
// trail knows less — after a restart, or taking the target over — neither
// erases nor alters them, and a commit made then keeps its co-authors.
type Said []SaidBy

// SaidBy is one answer and the changes it was given for.
type SaidBy struct {
	Changes []string        `json:"c"` // changeKey of each
	By      []cluster.Actor `json:"by"`
}

// maxSaid bounds the changes a body remembers, so the hidden state stays
// small; past it, an edit's users come from the trail alone.
const maxSaid = 256

// changeKey names one writer's write behind one edit: the edit's object,
// field and values, and the write as managedFields records it.
func changeKey(e analyzer.Edit, w cluster.Writer) string {
	b, _ := json.Marshal([]any{e.Object.String(), e.Field, e.From, e.To, w.Manager, w.Operation, w.Subresource, w.Time})
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:6])
}

// Recall takes what a pull request's body said (its state's Said).
func (a *Attribution) Recall(said Said) {
	if a == nil || len(said) == 0 {
		return
	}
	a.recalled = map[string][]cluster.Actor{}
	for _, s := range said {
		for _, c := range s.Changes {
			a.recalled[c] = s.By
		}
	}
	clear(a.writers) // answered before the recall
}

// Said is what a body of plan names, to keep in its state.
func (a *Attribution) Said(plan *analyzer.Plan) Said {
	if a == nil || plan == nil {
		return nil
	}
	byWho := map[string]*SaidBy{}
	n := 0
	for _, e := range slices.Concat(plan.Edits, refusalEdits(plan)) {
		for _, w := range a.Writers(e) {
			if len(w.By) == 0 || n == maxSaid {
				continue
			}
			brief := make([]cluster.Actor, len(w.By))
			for i, by := range w.By {
				brief[i] = by.Brief()
			}
			b, _ := json.Marshal(brief)
			s := byWho[string(b)]
			if s == nil {
				s = &SaidBy{By: brief}
				byWho[string(b)] = s
			}
			if c := changeKey(e, w); !slices.Contains(s.Changes, c) {
				s.Changes = append(s.Changes, c)
				n++
			}
		}
	}
	var out Said
	for _, k := range slices.Sorted(maps.Keys(byWho)) {
		s := byWho[k]
		slices.Sort(s.Changes)
		out = append(out, *s)
	}
	return out
}

func refusalEdits(plan *analyzer.Plan) []analyzer.Edit {
	out := make([]analyzer.Edit, 0, len(plan.Refusals))
	for _, r := range plan.Refusals {
		if r.Field != "" {
			out = append(out, r.Subject())
		}
	}
	return out
}
