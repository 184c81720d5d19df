package cluster

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const scaleURI = "/apis/apps/v1/namespaces/shop/deployments/web/scale"

// scaleBy is a `kubectl scale` of shop/web by user, served at hh:mm:ss.2.
func scaleBy(id, user, at string) string {
	return auditLine(id, user, "patch", scaleURI, "deployments", "shop", "web", "scale", 200, "2026-12-06T"+at+".200000Z", "2026-12-06T"+at+".210000Z", "")
}

func post(t *testing.T, tr *AuditTrail, items ...string) int {
	t.Helper()
	skipped, err := tr.Receive(strings.NewReader(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[` + strings.Join(items, ",") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	return skipped
}

// kubectl scale leaves no time in managedFields.
var noTime = Writer{Manager: "kubectl", Operation: "Update", Subresource: "scale"}

func users(as []Actor) string {
	var out []string
	for _, a := range as {
		out = append(out, a.User)
	}
	return strings.Join(out, ",")
}

// Issue 54, finding 6: the audit webhook posts each batch to one replica
// behind the Service (and an HA control plane writes one log per API
// server), so the replica holding a target may see only part of the
// writes. bob scaled last, but his batch reached the other replica: the
// holder must not name alice (who would become the commit's
// Co-authored-by). A trail names nobody unless its source is stated
// complete, and not while other replicas share the webhook's posts.
func TestAuditSplitTrailNamesNobody(t *testing.T) {
	holder, other := NewAuditTrail(0), NewAuditTrail(0) // two replicas
	post(t, holder, primer, scaleBy("1", "alice", "03:14:00"))
	post(t, other, scaleBy("2", "bob", "03:16:00"))
	if got := holder.ActorsOf(webObject(), noTime); len(got) != 0 {
		t.Errorf("a trail not stated complete names %s for the last /scale write; bob made it", users(got))
	}

	// Stated complete, but another replica takes some of the posts.
	replicas := 2
	shared := NewAuditTrail(0)
	shared.SetComplete(true)
	shared.SetReplicas(func() int { return replicas })
	post(t, shared, primer, scaleBy("1", "alice", "03:14:00"))
	if got := shared.ActorsOf(webObject(), noTime); len(got) != 0 {
		t.Errorf("a webhook trail two replicas share names %s", users(got))
	}
	ws := shared.Attribute(webObject(), []Writer{noTime})
	if !ws[0].Untold || !strings.HasSuffix(WritersText(ws), ", cannot tell who") {
		t.Errorf("an edit the trail cannot attribute reads %q, want it to say it cannot tell who", WritersText(ws))
	}
	// The other replica gone: what came while it shared the posts stays
	// unnamed; a write well after that is named.
	replicas = 1
	post(t, shared, scaleBy("3", "bob", "03:30:00"))
	if got := shared.ActorsOf(webObject(), noTime); users(got) != "bob" {
		t.Errorf("after the split, bob alone scaled: named %q", users(got))
	}
	if got := shared.ActorsOf(webObject(), Writer{Manager: "kubectl", Operation: "Update", Subresource: "scale", Time: "2026-12-06T03:14:00Z"}); len(got) != 0 {
		t.Errorf("a write made while the posts were shared is named: %s", users(got))
	}

	// The same trail alone and stated complete names alice: the rule above
	// is what keeps the holder from it.
	alone := wholeTrail(0)
	post(t, alone, scaleBy("1", "alice", "03:14:00"))
	if got := alone.ActorsOf(webObject(), noTime); users(got) != "alice" {
		t.Fatalf("a whole trail with alice's scale alone names %q", users(got))
	}
	post(t, alone, scaleBy("2", "bob", "03:16:00"))
	if got := alone.ActorsOf(webObject(), noTime); len(got) != 0 {
		t.Errorf("alice and bob both scaled and no time says who was last: named %s", users(got))
	}
}

// A trail is whole only after its first batch: a write just before it may
// have been missed (a restart, batches dropped while driftback was down).
func TestAuditTrailIsWholeOnlyAfterItsFirstBatch(t *testing.T) {
	tr := NewAuditTrail(0)
	tr.SetComplete(true)
	post(t, tr, scaleBy("1", "alice", "03:14:00"))
	if got := tr.ActorsOf(webObject(), noTime); len(got) != 0 {
		t.Errorf("the first batch's write is named (%s): bob's scale a moment before may be lost", users(got))
	}
	post(t, tr, scaleBy("2", "alice", "03:15:00"))
	if got := tr.ActorsOf(webObject(), noTime); users(got) != "alice" {
		t.Errorf("a write after the first batch: named %q, want alice", users(got))
	}
}

// One bad item loses only itself: the batch's other writes are kept, the
// bad one counted, the post answered 200 (a retry would not mend it). As
// the lost item may have been a write, the trail is whole again only from
// the batch after next.
func TestAuditBatchKeepsItsGoodItems(t *testing.T) {
	tr := wholeTrail(0)
	if skipped := post(t, tr, scaleBy("1", "alice", "03:14:00"), `{"stage":5}`, `"text"`, scaleBy("2", "alice", "03:14:30")); skipped != 2 {
		t.Fatalf("skipped %d items, want 2", skipped)
	}
	if len(tr.writes) != 2 || tr.Malformed() != 2 {
		t.Fatalf("kept %d writes and counted %d bad items, want 2 and 2", len(tr.writes), tr.Malformed())
	}
	if got := tr.ActorsOf(webObject(), noTime); len(got) != 0 {
		t.Errorf("named %s beside a lost item that may have been bob's scale", users(got))
	}
	post(t, tr, scaleBy("3", "carol", "03:20:00"))
	post(t, tr, scaleBy("4", "carol", "03:21:00"))
	if got := tr.ActorsOf(webObject(), noTime); users(got) != "carol" {
		t.Errorf("after the loss, carol alone scaled: named %q", users(got))
	}

	srv := httptest.NewServer(tr.Handler(func() (string, error) { return "t0ken", nil }, nil))
	defer srv.Close()
	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(`{"kind":"EventList","items":[`+scaleBy("5", "carol", "03:22:00")+`,7]}`))
	req.Header.Set("Authorization", "Bearer t0ken")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || len(tr.writes) != 5 {
		t.Fatalf("a post with one bad item: %d, %d writes kept, want 200 and 5", resp.StatusCode, len(tr.writes))
	}
}

// logrotate's copytruncate copies the log and truncates it in place; the
// API server writes on. The file is read again from its start, each line
// once, whether the writer appends (the file starts again small) or
// writes where it was (a hole of NULs up to its old offset, then the new
// lines, past where driftback had read).
func TestAuditLogCopytruncate(t *testing.T) {
	for _, appends := range []bool{true, false} {
		path := filepath.Join(t.TempDir(), "audit.log")
		flags := os.O_WRONLY | os.O_CREATE
		if appends {
			flags |= os.O_APPEND
		}
		w, err := os.OpenFile(path, flags, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		say := func(lines ...string) {
			if _, err := w.WriteString(strings.Join(lines, "\n") + "\n"); err != nil {
				t.Fatal(err)
			}
		}
		tr := NewAuditTrail(0)
		tr.SetComplete(true)
		tr.FollowFile(path)
		say(primer, scaleBy("1", "alice", "03:14:00"))
		if err := tr.Refresh(); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, 0); err != nil { // the copy is made; the file cut
			t.Fatal(err)
		}
		// More than was read before, so the file is not shorter than the
		// offset: only its content tells.
		say(scaleBy("2", "bob", "03:16:00"), scaleBy("3", "bob", "03:16:10"), scaleBy("4", "bob", "03:16:20"))
		if err := tr.Refresh(); err != nil {
			t.Fatal(err)
		}
		if err := tr.Refresh(); err != nil {
			t.Fatal(err)
		}
		if len(tr.writes) != 4 || tr.Malformed() != 0 {
			t.Fatalf("appends=%v: %d writes kept, %d malformed; want alice's and bob's three, each once", appends, len(tr.writes), tr.Malformed())
		}
		// What was written between the last read and the copy is lost: the
		// trail is whole again only after the first line read anew.
		at := func(sec string) Writer {
			return Writer{Manager: "kubectl", Operation: "Update", Subresource: "scale", Time: "2026-12-06T03:16:" + sec + "Z"}
		}
		if got := tr.ActorsOf(webObject(), at("00")); len(got) != 0 {
			t.Errorf("appends=%v: named %s for the second right after the cut", appends, users(got))
		}
		if got := tr.ActorsOf(webObject(), at("10")); users(got) != "bob" {
			t.Errorf("appends=%v: a write after the cut: named %q, want bob", appends, users(got))
		}
		w.Close()
		tr.Close()
	}
}

// A busy user's writes share one copy of their name, agent and groups.
func TestAuditTrailSharesUsersAndGroups(t *testing.T) {
	tr := wholeTrail(2)
	for i, at := range []string{"03:14:00", "03:14:01", "03:14:02", "03:14:03", "03:14:04"} {
		post(t, tr, scaleBy(string(rune('a'+i)), "alice", at))
	}
	k := tr.kept()
	if len(k) != 2 || len(k[0].actor.Groups) != 1 || &k[0].actor.Groups[0] != &k[1].actor.Groups[0] {
		t.Fatalf("two writes by alice hold separate group lists: %+v", k)
	}
	if len(tr.groups) != 1 || len(tr.strs) > 10 {
		t.Fatalf("the shared tables grew past what kept writes use: %d group lists, %d strings", len(tr.groups), len(tr.strs))
	}
}
