package enforce

import (
	"fmt"
	"sort"
	"strings"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/analyzer/report"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/internal/jsonvalue"
	"github.com/driftback/driftback/internal/kube"
)

// The GitOps tool's part (DESIGN §7.1): each drifted field is judged by
// what the tool will do with it. Drift it will restore on its own is
// reported on the check run and, by default, not proposed; drift it keeps
// is proposed, and the body says whether merging alone changes the
// cluster.

// Restoring is a drifted field the GitOps tool will put back on its own.
type Restoring struct {
	Object analyzer.ObjectRef
	Field  string
	Why    string
}

// liveIndex finds a target's live objects by reference.
type liveIndex map[analyzer.ObjectRef]cluster.Object

func indexLive(objs []cluster.Object) liveIndex {
	out := liveIndex{}
	for _, o := range objs {
		out[analyzer.RefOf(o.Object)] = o
	}
	return out
}

// fate judges one drifted field of a plan; an object driftback did not
// read is never assumed restored.
func (ix liveIndex) fate(e *cluster.Enforcement, plan *analyzer.Plan, ref analyzer.ObjectRef, field string, inGit bool) (cluster.Fate, string) {
	o, ok := ix[ref]
	if !ok {
		return cluster.Kept, "the live object was not read"
	}
	return e.Fate(o, plan.Metadata[ref], field, inGit)
}

// Apply applies the tool's fates to a plan. Unless the target proposes
// restored drift, each restored edit is taken out by planning again
// against the cluster as the tool will leave it (Git's value in that
// field), so the files hold only the rest; restored refusals move to the
// list the check run reports. replan plans against other live objects.
func Apply(e *cluster.Enforcement, proposeRestored bool, objs []cluster.Object, live []kube.LiveObject, plan *analyzer.Plan,
	replan func([]kube.LiveObject) (*analyzer.Plan, error)) (*analyzer.Plan, []Restoring, error) {
	if e == nil || plan == nil || proposeRestored {
		return plan, nil, nil // with proposeRestored every drift is proposed, and the notes warn
	}
	ix := indexLive(objs)
	var restored []analyzer.Edit
	var out []Restoring
	for _, ed := range plan.Edits {
		if f, why := ix.fate(e, plan, ed.Object, ed.Field, ed.From != nil); f == cluster.Restored {
			restored = append(restored, ed)
			out = append(out, Restoring{ed.Object, ed.Field, why})
		}
	}
	switch {
	case len(restored) == 0:
	case len(restored) == len(plan.Edits):
		p := *plan
		p.Edits, p.Files = []analyzer.Edit{}, []analyzer.File{}
		plan = &p
	default:
		again, err := replan(AsRestored(live, restored))
		if err != nil {
			return nil, nil, err
		}
		plan = again
	}
	// A refusal's field may be one the cluster added: judged as such, it
	// is restored only where the tool removes what kubectl added.
	kept := plan.Refusals[:0:0]
	for _, r := range plan.Refusals {
		if r.Object.Kind != "" && r.Field != "" {
			if f, why := ix.fate(e, plan, r.Object, r.Field, false); f == cluster.Restored {
				out = append(out, Restoring{r.Object, r.Field, why})
				continue
			}
		}
		kept = append(kept, r)
	}
	if len(kept) != len(plan.Refusals) {
		p := *plan
		p.Refusals = kept
		plan = &p
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Object.String()+" "+out[i].Field < out[j].Object.String()+" "+out[j].Field
	})
	return plan, out, nil
}

// ToolAdjusted is the plan made again against the cluster as the tool's
// own doing leaves it: its metadata (withToolMetadata), then the fields
// it is told to ignore (withoutIgnored). Every later plan of the poll
// starts from the live objects returned.
func ToolAdjusted(e *cluster.Enforcement, objs []cluster.Object, live []kube.LiveObject, plan *analyzer.Plan,
	replan func([]kube.LiveObject) (*analyzer.Plan, error)) ([]kube.LiveObject, *analyzer.Plan, error) {
	live, plan, err := withToolMetadata(e, live, plan, replan)
	if err != nil {
		return nil, nil, err
	}
	return withoutIgnored(e, objs, live, plan, replan)
}

// withToolMetadata plans again when a live object's labels or annotations
// differ from Git's only by the tool's own doing (Enforcement.
// WithToolMetadata: an opt-out Flux reads from Git alone, Argo CD's
// tracking label): that is no drift, so the live objects get Git's value
// there, and every later plan of the poll (restored, declined) starts from
// the live objects returned.
func withToolMetadata(e *cluster.Enforcement, live []kube.LiveObject, plan *analyzer.Plan,
	replan func([]kube.LiveObject) (*analyzer.Plan, error)) ([]kube.LiveObject, *analyzer.Plan, error) {
	if e == nil || plan == nil {
		return live, plan, nil
	}
	var out []kube.LiveObject
	for i, l := range live {
		obj, ok := e.WithToolMetadata(l.Object, plan.Metadata[analyzer.RefOf(l.Object)])
		if !ok {
			continue
		}
		if out == nil {
			out = append([]kube.LiveObject(nil), live...)
		}
		out[i].Object = obj
	}
	if out == nil {
		return live, plan, nil
	}
	plan, err := replan(out)
	return out, plan, err
}

// withoutIgnored plans again with the fields the tool is told to leave
// alone (Enforcement.Ignored: Argo CD's ignoreDifferences) holding Git's
// value, so they are neither proposed nor reported, and drops the
// refusals on such fields; every later plan of the poll starts from the
// live objects returned.
func withoutIgnored(e *cluster.Enforcement, objs []cluster.Object, live []kube.LiveObject, plan *analyzer.Plan,
	replan func([]kube.LiveObject) (*analyzer.Plan, error)) ([]kube.LiveObject, *analyzer.Plan, error) {
	if e == nil || plan == nil {
		return live, plan, nil
	}
	ix := indexLive(objs)
	ignored := func(ref analyzer.ObjectRef, field string) bool {
		o, ok := ix[ref]
		_, yes := e.Ignored(o, field)
		return ok && field != "" && yes
	}
	var drop []analyzer.Edit
	for _, ed := range plan.Edits {
		if ignored(ed.Object, ed.Field) {
			drop = append(drop, ed)
		}
	}
	if len(drop) > 0 {
		live = AsRestored(live, drop)
		again, err := replan(live)
		if err != nil {
			return nil, nil, err
		}
		plan = again
	}
	kept := plan.Refusals[:0:0]
	for _, r := range plan.Refusals {
		if !ignored(r.Object, r.Field) {
			kept = append(kept, r)
		}
	}
	if len(kept) != len(plan.Refusals) {
		p := *plan
		p.Refusals = kept
		plan = &p
	}
	return live, plan, nil
}

// UntrackedOptions adds to the plan's note on each live object the root no
// longer renders what the tool's per-object options make of it
// (Enforcement.LeavesUntracked: Argo CD's Prune=false, IgnoreExtraneous).
func UntrackedOptions(e *cluster.Enforcement, objs []cluster.Object, plan *analyzer.Plan) *analyzer.Plan {
	if e == nil || plan == nil {
		return plan
	}
	var notes []string
	for i, n := range plan.Notes {
		for _, o := range objs {
			ref := analyzer.RefOf(o.Object)
			if !strings.HasPrefix(n, "untracked: "+ref.String()+" is in the cluster") {
				continue
			}
			if why := e.LeavesUntracked(o); why != "" {
				if notes == nil {
					notes = append([]string(nil), plan.Notes...)
				}
				notes[i] = n + "; " + why
			}
			break
		}
	}
	if notes == nil {
		return plan
	}
	p := *plan
	p.Notes = notes
	return &p
}

// RestoredEdits are plan's edits of the fields in restoring.
func RestoredEdits(plan *analyzer.Plan, restoring []Restoring) []analyzer.Edit {
	if len(restoring) == 0 {
		return nil
	}
	type at struct {
		ref   analyzer.ObjectRef
		field string
	}
	set := map[at]bool{}
	for _, r := range restoring {
		set[at{r.Object, r.Field}] = true
	}
	var out []analyzer.Edit
	for _, e := range plan.Edits {
		if set[at{e.Object, e.Field}] {
			out = append(out, e)
		}
	}
	return out
}

// AsRestored copies live with each restored field holding Git's value
// (removed where Git lacks it): the cluster as the tool will leave it.
func AsRestored(live []kube.LiveObject, restored []analyzer.Edit) []kube.LiveObject {
	out := make([]kube.LiveObject, len(live))
	copy(out, live)
	for i, l := range out {
		ref := analyzer.RefOf(l.Object)
		copied := false
		for _, ed := range restored {
			if ed.Object != ref {
				continue
			}
			p, err := jsonvalue.ParsePath(ed.Field)
			if err != nil {
				continue // stays drifted, and so proposed
			}
			if !copied {
				out[i].Object = jsonvalue.Copy(l.Object).(map[string]any)
				copied = true
			}
			if ed.From == nil {
				jsonvalue.Delete(out[i].Object, p)
			} else {
				jsonvalue.Set(out[i].Object, p, jsonvalue.Copy(ed.From))
			}
		}
	}
	return out
}

// maxToolNotes bounds the GitOps section: a tool that restores hundreds of
// fields is told in a count, not a list.
const maxToolNotes = 30

// Notes says what the tool will do with what the plan proposes and
// with what it leaves to the tool. forCheck adds the estimated time of the
// tool's next reconcile, which the pull request body leaves out (it would
// change the body at every reconcile).
func Notes(e *cluster.Enforcement, objs []cluster.Object, plan *analyzer.Plan, restoring []Restoring, forCheck bool) []report.ToolNote {
	if e == nil || plan == nil {
		return nil
	}
	var notes []report.ToolNote
	when := "at its next reconcile"
	if forCheck {
		if w := e.When(); w != "" {
			when = w
		}
	}
	ix := indexLive(objs)
	byWhy := map[string]int{}
	var order []string
	restoredProposed := 0
	for _, ed := range plan.Edits {
		fate, why := ix.fate(e, plan, ed.Object, ed.Field, ed.From != nil)
		switch fate {
		case cluster.Restored:
			if restoredProposed < maxToolNotes {
				notes = append(notes, report.ToolNote{Object: ed.Object.String(), Field: ed.Field,
					Text: e.Tool + " will put Git's value back " + when + ": merge before then to keep the change (" + why + ")"})
			}
			restoredProposed++
		default:
			if byWhy[why] == 0 {
				order = append(order, why)
			}
			byWhy[why]++
		}
	}
	if restoredProposed > maxToolNotes {
		notes = append(notes, report.ToolNote{Text: fmt.Sprintf("…and %d more fields %s will put back", restoredProposed-maxToolNotes, e.Tool)})
	}
	for _, why := range order {
		text := fmt.Sprintf("%d proposed edit(s) stay in the cluster until someone changes them: %s", byWhy[why], why)
		n := report.ToolNote{Text: text}
		switch {
		case e.Suspended:
			n.Text = fmt.Sprintf("%s is suspended: merging changes Git only, and the cluster keeps what runs now. Resume it after the merge and it applies the merge commit:", e.Object)
			n.Command = e.Resume
		case e.Mode == cluster.UntilNextSync:
			n.Text = fmt.Sprintf("%d proposed edit(s) last until the next sync: %s %s. Merge first to keep them.", byWhy[why], e.Object, e.Why)
		}
		notes = append(notes, n)
	}
	for i, r := range restoring {
		if i == maxToolNotes {
			notes = append(notes, report.ToolNote{Text: fmt.Sprintf("…and %d more drifted fields %s will put back", len(restoring)-maxToolNotes, e.Tool)})
			break
		}
		notes = append(notes, report.ToolNote{Object: r.Object.String(), Field: r.Field,
			Text: "not proposed: " + e.Tool + " will put Git's value back " + when + " (" + r.Why + ")"})
	}
	return notes
}
