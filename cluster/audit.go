package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
)

// Who made a write (issue 43): managedFields name the field manager
// (kubectl-edit) but not the person. The apiserver's audit log does: for
// every request, the authenticated user, their groups, whom they
// impersonated, the verb and the user agent. An AuditTrail keeps the
// successful writes of an audit stream (the log backend's file, or the
// webhook backend's posts) and matches each field manager's last write to
// the request that made it.
//
// Only request metadata is kept. The decoder below has no field for an
// event's requestObject or responseObject, so a Secret's body (or any
// body) an audit policy logs at Request level is read past and never
// stored, logged or shown.

// Actor is the user behind one write, as the audit log recorded it.
type Actor struct {
	User string `json:"user"`
	// Groups are the user's groups, without the system:authenticated every
	// authenticated user has.
	Groups []string `json:"groups,omitempty"`
	// As is the user the request impersonated; User made it.
	As        string `json:"as,omitempty"`
	Verb      string `json:"verb"`
	UserAgent string `json:"userAgent,omitempty"`
	AuditID   string `json:"auditID,omitempty"`
}

// String reads "alice [devs] with kubectl/v1.37.2", or "admin as alice ...".
func (a Actor) String() string {
	s := a.User
	if a.As != "" {
		s += " as " + a.As
	}
	if len(a.Groups) > 0 {
		s += " [" + strings.Join(a.Groups, ", ") + "]"
	}
	if ua := shortAgent(a.UserAgent); ua != "" {
		s += " with " + ua
	}
	return s
}

// shortAgent keeps a user agent's program/version ("kubectl/v1.37.2 (linux/
// amd64) kubernetes/abc" → "kubectl/v1.37.2").
func shortAgent(ua string) string {
	ua, _, _ = strings.Cut(strings.TrimSpace(ua), " ")
	return truncateRunes(ua, 80)
}

func truncateRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// auditEvent is the part of an audit.k8s.io/v1 Event driftback reads. No
// requestObject, responseObject or annotations: see above.
type auditEvent struct {
	AuditID    string `json:"auditID"`
	Stage      string `json:"stage"`
	RequestURI string `json:"requestURI"`
	Verb       string `json:"verb"`
	User       struct {
		Username string   `json:"username"`
		Groups   []string `json:"groups"`
	} `json:"user"`
	ImpersonatedUser *struct {
		Username string `json:"username"`
	} `json:"impersonatedUser"`
	UserAgent string `json:"userAgent"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceived time.Time `json:"requestReceivedTimestamp"`
	StageTime       time.Time `json:"stageTimestamp"`
}

// write is a successful write the trail keeps.
type write struct {
	group, resource, namespace, name, subresource string
	fieldManager                                  string // from the request's query; "" when it set none
	from, to                                      time.Time
	actor                                         Actor
}

// writeVerbs are the verbs that can set a field manager's time.
var writeVerbs = map[string]bool{"create": true, "update": true, "patch": true}

// DefaultAuditKeep is how many writes a trail keeps when not told.
const DefaultAuditKeep = 20000

// AuditTrail holds the newest successful writes of one cluster's audit
// stream, at most keep of them: memory stays bounded however busy the
// cluster. Safe for concurrent use.
type AuditTrail struct {
	mu     sync.Mutex
	keep   int
	writes []write // oldest first
	// Malformed counts lines or posts that were not audit events.
	malformed int
	file      *auditFile
	// reading serialises Refresh: the polls of several targets on one
	// cluster may refresh at once.
	reading sync.Mutex
}

// NewAuditTrail keeps at most keep writes (DefaultAuditKeep when keep < 1).
func NewAuditTrail(keep int) *AuditTrail {
	if keep < 1 {
		keep = DefaultAuditKeep
	}
	return &AuditTrail{keep: keep}
}

// add keeps e when it is a successful write to a named object. A dry run
// (kubectl diff, --dry-run=server, a GitOps tool's dry-run apply) changes
// nothing and is not kept: it is logged as a successful patch under the
// real manager's name.
func (t *AuditTrail) add(e auditEvent) {
	if e.Stage != "ResponseComplete" || !writeVerbs[e.Verb] || e.ObjectRef == nil || e.ObjectRef.Name == "" {
		return
	}
	if e.ResponseStatus != nil && (e.ResponseStatus.Code < 200 || e.ResponseStatus.Code > 299) {
		return
	}
	u, err := url.ParseRequestURI(e.RequestURI)
	if err != nil {
		return
	}
	query := u.Query()
	if query.Has("dryRun") {
		return
	}
	w := write{
		group: e.ObjectRef.APIGroup, resource: e.ObjectRef.Resource, namespace: e.ObjectRef.Namespace,
		name: e.ObjectRef.Name, subresource: e.ObjectRef.Subresource,
		from: e.RequestReceived, to: e.StageTime,
		actor: Actor{User: e.User.Username, Verb: e.Verb, UserAgent: truncateRunes(e.UserAgent, 256), AuditID: e.AuditID},
	}
	w.fieldManager = query.Get("fieldManager")
	for _, g := range e.User.Groups {
		if g != "system:authenticated" {
			w.actor.Groups = append(w.actor.Groups, g)
		}
	}
	if e.ImpersonatedUser != nil {
		w.actor.As = e.ImpersonatedUser.Username
	}
	if w.to.IsZero() {
		w.to = w.from
	}
	t.writes = append(t.writes, w)
	// Trimmed in bulk, so a busy stream costs one copy per keep writes;
	// only the newest keep are ever read (kept).
	if len(t.writes) >= 2*t.keep {
		t.writes = append(t.writes[:0:0], t.kept()...)
	}
}

// kept are the newest keep writes, oldest first.
func (t *AuditTrail) kept() []write {
	return t.writes[max(0, len(t.writes)-t.keep):]
}

// Receive reads one post of the audit webhook backend: an EventList (or a
// single Event). Events other than successful writes are dropped.
func (t *AuditTrail) Receive(r io.Reader) error {
	var doc struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.countMalformed()
		return fmt.Errorf("not an audit event list: %v", err)
	}
	items := doc.Items
	switch doc.Kind {
	case "EventList":
	case "Event":
		items = []json.RawMessage{raw}
	default:
		t.countMalformed()
		return fmt.Errorf("not an audit event list: kind %q", doc.Kind)
	}
	events := make([]auditEvent, 0, len(items))
	for _, it := range items {
		var e auditEvent
		if err := json.Unmarshal(it, &e); err != nil {
			t.countMalformed()
			return fmt.Errorf("an item of the audit event list: %v", err)
		}
		events = append(events, e)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, e := range events {
		t.add(e)
	}
	return nil
}

func (t *AuditTrail) countMalformed() {
	t.mu.Lock()
	t.malformed++
	t.mu.Unlock()
}

// addLines adds the events of a chunk of JSON lines (the log backend's
// format). A line that is not an event is counted and skipped: one bad
// line must not hide the rest.
func (t *AuditTrail) addLines(chunk []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, line := range bytes.Split(chunk, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var e auditEvent
		if err := json.Unmarshal(line, &e); err != nil {
			t.malformed++
			continue
		}
		t.add(e)
	}
}

// Malformed says how many lines or posts were not audit events.
func (t *AuditTrail) Malformed() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.malformed
}

// ActorsOf finds who made w's last write to o: the audit records of a
// successful write to the same object (and resource) through the same
// subresource, by the same field manager, whose request was being served
// in the second managedFields recorded. Several distinct users when the
// second holds several such writes; none when the trail has no match (the
// write is older than the trail, or unaudited).
//
// An entry written through /scale carries no time (measured on
// kube-apiserver v1.37.2: `kubectl scale` leaves manager kubectl,
// subresource scale, no time). Without a time to match, a user is named
// only when every such write the trail holds is theirs: a guess could
// name the wrong person.
func (t *AuditTrail) ActorsOf(o Object, w Writer) []Actor {
	if t == nil {
		return nil
	}
	var at time.Time
	if w.Time != "" {
		var err error
		if at, err = time.Parse(time.RFC3339, w.Time); err != nil {
			return nil
		}
	}
	gvk := gvkOf(o.Object)
	group, ns, name := gvk.Group, namespaceOf(o.Object), nameOf(o.Object)
	resource := o.Resource
	if resource == "" && gvk.Kind != "" {
		// Read from a file: the resource Kubernetes names a kind by
		// (Deployment → deployments, Ingress → ingresses). A kind with an
		// irregular plural then matches nothing, never another kind's
		// writes.
		plural, _ := meta.UnsafeGuessKindToResource(gvk)
		resource = plural.Resource
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	seen := map[string]bool{}
	var out []Actor
	for _, x := range t.kept() {
		if x.name != name || x.namespace != ns || x.group != group || x.subresource != w.Subresource ||
			x.resource != resource || !sameManager(x, w.Manager) {
			continue
		}
		// managedFields keeps whole seconds: the write happened in [at,
		// at+1s), while its request was being served.
		if !at.IsZero() && (x.from.Truncate(time.Second).After(at) || x.to.Before(at)) {
			continue
		}
		key := x.actor.User + "\x00" + x.actor.As
		if !seen[key] {
			seen[key] = true
			out = append(out, x.actor)
		}
	}
	if at.IsZero() && len(out) > 1 {
		return nil // several users wrote through that manager: which one last is not known
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].User < out[j].User })
	return out
}

// Attribute fills in who made each writer's last write, where the trail
// knows.
func (t *AuditTrail) Attribute(o Object, ws []Writer) []Writer {
	if t == nil {
		return ws
	}
	out := make([]Writer, len(ws))
	for i, w := range ws {
		w.By = t.ActorsOf(o, w)
		out[i] = w
	}
	return out
}

// sameManager says whether x could have been written by manager: the
// request named it, or named none and the apiserver took the user
// agent's program name as the manager.
func sameManager(x write, manager string) bool {
	if x.fieldManager != "" {
		return x.fieldManager == manager
	}
	prog, _, _ := strings.Cut(x.actor.UserAgent, "/")
	return prog != "" && prog == manager
}

// errAuditUnauthorized is what a post without the token gets.
var errAuditUnauthorized = errors.New("audit webhook: missing or wrong bearer token")
