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
// A trail names a user only when it can hold every write (issue 54): the
// rule "the write in that second" or "every such write is theirs" names
// the wrong person when some writes went elsewhere (an HA control plane's
// other API servers, a webhook batch posted to another replica, a log cut
// by copytruncate). So it names nobody unless its source is stated
// complete (audit.complete), and even then only for writes after since:
// the moment from which it has missed nothing it knows of.
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
	Verb      string `json:"verb,omitempty"`
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

// Brief is a with only what String shows: what a pull request's body
// remembers of who made a write.
func (a Actor) Brief() Actor {
	return Actor{User: a.User, Groups: a.Groups, As: a.As, UserAgent: shortAgent(a.UserAgent)}
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

// auditSplitSlack is how far past the newest event it has seen a
// webhook-fed trail stops trusting itself while other replicas may take
// posts: the backend's batches wait up to 30 s and are retried, so a batch
// another replica takes may hold events that much newer.
const auditSplitSlack = 5 * time.Minute

// auditOrderSlack is how far out of order an audit stream's events may
// come (concurrent requests finish and are logged in either order): a
// write missed just before a batch may have completed that much after
// the batch's oldest event.
const auditOrderSlack = time.Second

// AuditTrail holds the newest successful writes of one cluster's audit
// stream, at most keep of them: memory stays bounded however busy the
// cluster. Safe for concurrent use.
type AuditTrail struct {
	mu     sync.Mutex
	keep   int
	writes []write // oldest first
	// Malformed counts lines or items that were not audit events.
	malformed int
	file      *auditFile
	// complete: the source is stated to carry every write (audit.complete).
	complete bool
	// replicas counts the replicas the webhook's posts are spread over;
	// nil: this one alone.
	replicas func() int
	// since: every write that completed after it (the API server's clock)
	// is in the trail, as far as the trail knows. begun is false until the
	// first batch sets it; restart makes the next batch move it again
	// (something was lost just before it).
	since, newest  time.Time
	begun, restart bool
	// strs and groups share the users, agents and group lists of kept
	// writes: a busy user's thousand writes hold one copy.
	strs   map[string]string
	groups map[string][]string
	// reading serialises Refresh: the polls of several targets on one
	// cluster may refresh at once.
	reading sync.Mutex
}

// NewAuditTrail keeps at most keep writes (DefaultAuditKeep when keep < 1).
func NewAuditTrail(keep int) *AuditTrail {
	if keep < 1 {
		keep = DefaultAuditKeep
	}
	return &AuditTrail{keep: keep, strs: map[string]string{}, groups: map[string][]string{}}
}

// SetComplete states whether the trail's sources carry every write the
// cluster's API servers accept (audit.complete): one API server, or a log
// that gathers all of theirs, and, for the webhook, one replica taking
// the posts. Without it the trail names nobody.
func (t *AuditTrail) SetComplete(complete bool) {
	t.mu.Lock()
	t.complete = complete
	t.mu.Unlock()
}

// SetReplicas tells a webhook-fed trail how many replicas share the posts
// (the Service gives each batch to one of them); nil: this one alone.
func (t *AuditTrail) SetReplicas(replicas func() int) {
	t.mu.Lock()
	t.replicas = replicas
	t.mu.Unlock()
}

// took notes a batch of events (a post, or a chunk of the log file) that
// completed between oldest and newest; lost says some of its items could
// not be read. The first batch, and the one after a loss, move since:
// what came before them may be missing.
func (t *AuditTrail) took(oldest, newest time.Time, lost bool) {
	t.newest = later(t.newest, newest)
	t.noteSplit()
	switch {
	case lost:
		// The lost item lies among the batch's; the next batch moves since
		// again, in case it was the last.
		t.since, t.restart = later(t.since, newest), true
	case oldest.IsZero():
	case !t.begun || t.restart:
		t.since, t.begun, t.restart = later(t.since, oldest.Add(auditOrderSlack)), true, false
	}
}

// lose says the trail missed writes it cannot date (a truncated log, a
// skipped part): the next batch moves since.
func (t *AuditTrail) lose() {
	t.restart = true
}

// wholeSince is the moment after which the trail holds every write;
// ok is false when it cannot vouch for any. Other replicas taking the
// webhook's posts move it past what they may have taken.
func (t *AuditTrail) wholeSince() (time.Time, bool) {
	if !t.complete || !t.begun {
		return time.Time{}, false
	}
	t.noteSplit()
	since := t.since
	if n := len(t.writes) - t.keep; n > 0 && t.writes[n-1].to.After(since) {
		since = t.writes[n-1].to // older writes were let go
	}
	return since, true
}

// noteSplit moves since past what other replicas may have taken while
// they share the webhook's posts. Checked at every batch and every
// question, so a split is seen while it lasts. A log file is read whole
// by every replica: it needs no such care.
func (t *AuditTrail) noteSplit() {
	if t.file == nil && t.replicas != nil && t.replicas() > 1 {
		t.since = later(t.since, t.newest.Add(auditSplitSlack))
	}
}

// intern is s as the trail holds it already, if it does.
func (t *AuditTrail) intern(s string) string {
	if kept, ok := t.strs[s]; ok {
		return kept
	}
	t.strs[s] = s
	return s
}

// internGroups is gs as the trail holds it already, if it does.
// A new list (fresh) has its names shared too; a kept one is never
// written to, as actors handed out read it.
func (t *AuditTrail) internGroups(gs []string, fresh bool) []string {
	if len(gs) == 0 {
		return nil
	}
	key := strings.Join(gs, "\x00")
	if kept, ok := t.groups[key]; ok {
		return kept
	}
	if fresh {
		for i, g := range gs {
			gs[i] = t.intern(g)
		}
	}
	t.groups[key] = gs
	return gs
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
		group: t.intern(e.ObjectRef.APIGroup), resource: t.intern(e.ObjectRef.Resource), namespace: e.ObjectRef.Namespace,
		name: e.ObjectRef.Name, subresource: t.intern(e.ObjectRef.Subresource),
		from: e.RequestReceived, to: e.StageTime,
		actor: Actor{User: t.intern(e.User.Username), Verb: t.intern(e.Verb), UserAgent: t.intern(truncateRunes(e.UserAgent, 256)), AuditID: e.AuditID},
	}
	w.fieldManager = t.intern(query.Get("fieldManager"))
	groups := e.User.Groups[:0]
	for _, g := range e.User.Groups {
		if g != "system:authenticated" {
			groups = append(groups, g)
		}
	}
	w.actor.Groups = t.internGroups(groups, true)
	if e.ImpersonatedUser != nil {
		w.actor.As = t.intern(e.ImpersonatedUser.Username)
	}
	if w.to.IsZero() {
		w.to = w.from
	}
	t.writes = append(t.writes, w)
	// Trimmed in bulk, so a busy stream costs one copy per keep writes;
	// only the newest keep are ever read (kept). The writes let go
	// before the trim still date wholeSince until then.
	if len(t.writes) >= 2*t.keep {
		t.since = later(t.since, t.writes[len(t.writes)-t.keep-1].to)
		t.writes = append(t.writes[:0:0], t.kept()...)
		t.reintern()
	}
}

// reintern keeps only the shared strings and groups kept writes use, so
// the tables stay bounded by keep.
func (t *AuditTrail) reintern() {
	strs, groups := t.strs, t.groups
	t.strs, t.groups = make(map[string]string, len(strs)), make(map[string][]string, len(groups))
	for i := range t.writes {
		w := &t.writes[i]
		for _, s := range []*string{&w.group, &w.resource, &w.subresource, &w.fieldManager, &w.actor.User, &w.actor.Verb, &w.actor.UserAgent, &w.actor.As} {
			*s = t.intern(*s)
		}
		w.actor.Groups = t.internGroups(w.actor.Groups, false)
	}
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// eventTime is when e completed, by the API server's clock.
func eventTime(e auditEvent) time.Time {
	if e.StageTime.IsZero() {
		return e.RequestReceived
	}
	return e.StageTime
}

// kept are the newest keep writes, oldest first.
func (t *AuditTrail) kept() []write {
	return t.writes[max(0, len(t.writes)-t.keep):]
}

// Receive reads one post of the audit webhook backend: an EventList (or a
// single Event). Events other than successful writes are dropped. An item
// that is not an event is counted and skipped (skipped says how many):
// one bad item must not lose the batch's other writes. A post that is not
// an event list at all is an error.
func (t *AuditTrail) Receive(r io.Reader) (skipped int, err error) {
	var doc struct {
		Kind  string            `json:"kind"`
		Items []json.RawMessage `json:"items"`
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		return 0, err
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.countMalformed(1)
		return 0, fmt.Errorf("not an audit event list: %v", err)
	}
	items := doc.Items
	switch doc.Kind {
	case "EventList":
	case "Event":
		items = []json.RawMessage{raw}
	default:
		t.countMalformed(1)
		return 0, fmt.Errorf("not an audit event list: kind %q", doc.Kind)
	}
	events := make([]auditEvent, 0, len(items))
	for _, it := range items {
		var e auditEvent
		if err := json.Unmarshal(it, &e); err != nil {
			skipped++
			continue
		}
		events = append(events, e)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.malformed += skipped
	t.addBatch(events, skipped > 0)
	return skipped, nil
}

// addBatch adds a batch's events; lost says some of its items were not
// read.
func (t *AuditTrail) addBatch(events []auditEvent, lost bool) {
	var oldest, newest time.Time
	for _, e := range events {
		t.add(e)
		at := eventTime(e)
		newest = later(newest, at)
		if oldest.IsZero() || at.Before(oldest) {
			oldest = at
		}
	}
	t.took(oldest, newest, lost)
}

func (t *AuditTrail) countMalformed(n int) {
	t.mu.Lock()
	t.malformed += n
	t.mu.Unlock()
}

// addLines adds the events of a chunk of JSON lines (the log backend's
// format). A line that is not an event is counted and skipped: one bad
// line must not hide the rest.
func (t *AuditTrail) addLines(chunk []byte) {
	var events []auditEvent
	bad := 0
	for _, line := range bytes.Split(chunk, []byte("\n")) {
		// NULs: the hole a writer without O_APPEND leaves in a file
		// truncated under it (copytruncate).
		line = bytes.Trim(line, " \t\r\x00")
		if len(line) == 0 {
			continue
		}
		var e auditEvent
		if err := json.Unmarshal(line, &e); err != nil {
			bad++
			continue
		}
		events = append(events, e)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.malformed += bad
	t.addBatch(events, bad > 0)
}

// Malformed says how many lines, posts or items were not audit events.
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
// only when every such write since the trail became whole is theirs: a
// guess could name the wrong person.
//
// Nobody is named unless the trail holds every write of that second (or,
// without a time, since it became whole): wholeSince.
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
	since, whole := t.wholeSince()
	if !whole || (!at.IsZero() && !at.After(since)) {
		return nil // the trail may miss a write of that second
	}
	seen := map[string]bool{}
	var out []Actor
	for _, x := range t.kept() {
		if at.IsZero() && !x.to.After(since) {
			continue // before the trail was whole: it may miss later ones like it
		}
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
// knows, and marks the others Untold: a cluster with an audit source says
// "cannot tell who" rather than leave it open.
func (t *AuditTrail) Attribute(o Object, ws []Writer) []Writer {
	if t == nil {
		return ws
	}
	out := make([]Writer, len(ws))
	for i, w := range ws {
		w.By = t.ActorsOf(o, w)
		w.Untold = len(w.By) == 0
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
