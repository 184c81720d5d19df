package cluster

import (
	"fmt"
	"strings"

	"github.com/driftback/driftback/internal/jsonvalue"
)

// Who changed a field (issue 43): metadata.managedFields records, per
// field manager, the fields it owns, how it last wrote (Update or Apply,
// through which subresource) and when. A drifted field's owners are what
// made the drift: kubectl-edit, kubectl-scale through /scale, an
// operator. Read from the objects a poll lists already; no request.

// Writer is a field manager that owns a field, as managedFields records it.
type Writer struct {
	Manager     string `json:"manager"`
	Operation   string `json:"operation"`             // Update or Apply
	Subresource string `json:"subresource,omitempty"` // "scale", "status", ... or ""
	Time        string `json:"time,omitempty"`        // its last write, as the server recorded it
	// By is who made that write, from the cluster's audit log (AuditTrail);
	// several when one second held several matching writes, none when
	// there is no audit source or it has no match.
	By []Actor `json:"by,omitempty"`
	// Untold: the cluster has an audit source, but it cannot tell who made
	// that write (the trail may miss writes, or the write is older than
	// it): said, rather than left open or guessed.
	Untold bool `json:"untold,omitempty"`
}

// String reads as a reviewer would say it: kubectl-scale (Update, through
// /scale) at 2026-12-06T03:12:00Z.
func (w Writer) String() string {
	how := w.Operation
	if w.Subresource != "" {
		how += ", through /" + w.Subresource
	}
	s := w.Manager
	if how != "" {
		s += " (" + how + ")"
	}
	if w.Time != "" {
		s += " at " + w.Time
	}
	switch len(w.By) {
	case 0:
		if w.Untold {
			s += ", cannot tell who"
		}
	case 1:
		s += " by " + w.By[0].String()
	default:
		who := make([]string, len(w.By))
		for i, a := range w.By {
			who[i] = a.String()
		}
		s += " by one of " + strings.Join(who, "; ")
	}
	return s
}

// ObjectWriters are an object's field managers, its managedFields parsed
// once, to ask who owns each of several fields.
type ObjectWriters struct{ own *Ownership }

// WritersOf parses o's managedFields; nil, which names nobody, when o came
// without them.
func WritersOf(o Object) (*ObjectWriters, error) {
	if o.ManagedFields == nil {
		return nil, nil
	}
	ms, err := ParseManagedFields(o.ManagedFields)
	if err != nil {
		return nil, err
	}
	return &ObjectWriters{own: &Ownership{live: o.Object, managers: ms}}, nil
}

// Of names the managers that own the field at field (the plan's path
// syntax), or something under it, appliers included, in managedFields'
// order.
func (w *ObjectWriters) Of(field string) ([]Writer, error) {
	if w == nil {
		return nil, nil
	}
	p, err := jsonvalue.ParsePath(field)
	if err != nil {
		return nil, fmt.Errorf("field %q: %v", field, err)
	}
	var out []Writer
	for _, m := range w.own.managers {
		if w.own.owns(m, p) {
			out = append(out, Writer{Manager: m.Name, Operation: m.Operation, Subresource: m.Subresource, Time: m.Time})
		}
	}
	return out, nil
}

// WritersText says who owns a field in one line: one writer, or several
// ("several managers: a; b"); "" when none is known.
func WritersText(ws []Writer) string {
	switch len(ws) {
	case 0:
		return ""
	case 1:
		return ws[0].String()
	}
	parts := make([]string, len(ws))
	for i, w := range ws {
		parts[i] = w.String()
	}
	return "several managers: " + strings.Join(parts, "; ")
}
