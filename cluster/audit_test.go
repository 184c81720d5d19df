package cluster

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// auditLine is one audit.k8s.io/v1 event as the apiserver writes it.
func auditLine(id, user, verb, uri, resource, ns, name, sub string, code int, received, done string, extra string) string {
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":%q,"stage":"ResponseComplete","requestURI":%q,"verb":%q,`+
		`"user":{"username":%q,"groups":["devs","system:authenticated"]},"userAgent":"kubectl/v1.37.2 (linux/amd64) kubernetes/abc",`+
		`"objectRef":{"resource":%q,"namespace":%q,"name":%q,"apiGroup":"apps","apiVersion":"v1","subresource":%q},`+
		`"responseStatus":{"metadata":{},"code":%d},"requestReceivedTimestamp":%q,"stageTimestamp":%q%s}`,
		id, uri, verb, user, resource, ns, name, sub, code, received, done, extra)
}

// primer is an event long before the tests' writes: a trail's first batch
// only makes it whole from then on.
var primer = auditLine("0", "system:apiserver", "get", "/api/v1/namespaces/shop", "namespaces", "", "shop", "", 200,
	"2026-12-06T00:00:00.000000Z", "2026-12-06T00:00:00.000000Z", "")

// wholeTrail is a trail stated complete (audit.complete) that has heard
// the primer: whole for every write after it.
func wholeTrail(keep int) *AuditTrail {
	tr := NewAuditTrail(keep)
	tr.SetComplete(true)
	tr.addLines([]byte(primer + "\n"))
	return tr
}

func webObject() Object {
	return Object{Resource: "deployments", Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop"}}}
}

// A writer's last write is matched to the request that made it: same
// object, subresource and field manager, served in the recorded second.
// Failed writes, reads, other managers and other seconds are not it.
func TestAuditTrailNamesTheUserBehindAWrite(t *testing.T) {
	tr := wholeTrail(0)
	lines := []string{
		auditLine("1", "alice", "patch", "/apis/apps/v1/namespaces/shop/deployments/web/scale?fieldManager=kubectl-scale", "deployments", "shop", "web", "scale", 200, "2026-12-06T03:14:00.200000Z", "2026-12-06T03:14:00.210000Z", ""),
		auditLine("2", "mallory", "patch", "/apis/apps/v1/namespaces/shop/deployments/web/scale?fieldManager=kubectl-scale", "deployments", "shop", "web", "scale", 403, "2026-12-06T03:14:00.300000Z", "2026-12-06T03:14:00.310000Z", ""),
		auditLine("3", "eve", "get", "/apis/apps/v1/namespaces/shop/deployments/web/scale", "deployments", "shop", "web", "scale", 200, "2026-12-06T03:14:00.400000Z", "2026-12-06T03:14:00.410000Z", ""),
		auditLine("4", "bob", "patch", "/apis/apps/v1/namespaces/shop/deployments/web?fieldManager=kubectl-set", "deployments", "shop", "web", "", 200, "2026-12-06T03:12:00.900000Z", "2026-12-06T03:12:01.010000Z", ""),
		auditLine("5", "carol", "patch", "/apis/apps/v1/namespaces/shop/deployments/web?fieldManager=kubectl-edit", "deployments", "shop", "web", "", 200, "2026-12-06T03:12:00.500000Z", "2026-12-06T03:12:00.510000Z", ""),
	}
	if _, err := tr.Receive(strings.NewReader(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[` + strings.Join(lines, ",") + `]}`)); err != nil {
		t.Fatal(err)
	}
	o := webObject()
	scale := Writer{Manager: "kubectl-scale", Operation: "Update", Subresource: "scale", Time: "2026-12-06T03:14:00Z"}
	if got := tr.ActorsOf(o, scale); len(got) != 1 || got[0].User != "alice" || got[0].Verb != "patch" || strings.Join(got[0].Groups, ",") != "devs" {
		t.Fatalf("scale by %+v, want alice alone (mallory's write failed, eve only read)", got)
	}
	set := Writer{Manager: "kubectl-set", Operation: "Update", Time: "2026-12-06T03:12:00Z"}
	if got := tr.ActorsOf(o, set); len(got) != 1 || got[0].User != "bob" {
		t.Fatalf("set image by %+v, want bob (his request was served across the second)", got)
	}
	if got := tr.ActorsOf(o, Writer{Manager: "kubectl-set", Operation: "Update", Time: "2026-12-06T03:13:00Z"}); len(got) != 0 {
		t.Fatalf("a write in another second was matched: %+v", got)
	}
	if got := tr.ActorsOf(o, Writer{Manager: "kubectl-scale", Operation: "Update", Time: "2026-12-06T03:14:00Z"}); len(got) != 0 {
		t.Fatalf("a write through /scale was matched to the main resource: %+v", got)
	}
	other := webObject()
	other.Resource = "statefulsets"
	if got := tr.ActorsOf(other, scale); len(got) != 0 {
		t.Fatalf("a Deployment's write was matched to a StatefulSet of the same name: %+v", got)
	}
	// Read from a file, an object has no resource: its kind's is used.
	fromFile := webObject()
	fromFile.Resource = ""
	if got := tr.ActorsOf(fromFile, scale); len(got) != 1 || got[0].User != "alice" {
		t.Fatalf("a Deployment read from a file: %+v", got)
	}
	fromFile.Object["kind"], fromFile.Object["apiVersion"] = "StatefulSet", "apps/v1"
	if got := tr.ActorsOf(fromFile, scale); len(got) != 0 {
		t.Fatalf("a StatefulSet read from a file took a Deployment's write: %+v", got)
	}
	if s := (Writer{Manager: "kubectl-scale", Operation: "Update", Subresource: "scale", Time: "2026-12-06T03:14:00Z", By: tr.ActorsOf(o, scale)}).String(); s != "kubectl-scale (Update, through /scale) at 2026-12-06T03:14:00Z by alice [devs] with kubectl/v1.37.2" {
		t.Fatalf("String() = %q", s)
	}
}

// A dry run changes nothing: kubectl diff and --dry-run=server are logged
// as successful patches under the real manager's name, and are not kept.
// An entry without a time (kubectl scale) names a user only when every
// such write the trail holds is theirs.
func TestAuditTrailDryRunsAndEntriesWithoutTime(t *testing.T) {
	tr := wholeTrail(0)
	scaleURI := "/apis/apps/v1/namespaces/shop/deployments/web/scale"
	tr.addLines([]byte(strings.Join([]string{
		auditLine("1", "alice", "patch", scaleURI, "deployments", "shop", "web", "scale", 200, "2026-12-06T03:14:00.200000Z", "2026-12-06T03:14:00.210000Z", ""),
		auditLine("2", "ci-bot", "patch", scaleURI+"?dryRun=All", "deployments", "shop", "web", "scale", 200, "2026-12-06T03:15:00.200000Z", "2026-12-06T03:15:00.210000Z", ""),
	}, "\n") + "\n"))
	noTime := Writer{Manager: "kubectl", Operation: "Update", Subresource: "scale"}
	if got := tr.ActorsOf(webObject(), noTime); len(got) != 1 || got[0].User != "alice" {
		t.Fatalf("a dry run after alice's scale: %+v, want alice", got)
	}
	tr.addLines([]byte(auditLine("3", "bob", "patch", scaleURI, "deployments", "shop", "web", "scale", 200, "2026-12-06T03:16:00.200000Z", "2026-12-06T03:16:00.210000Z", "") + "\n"))
	if got := tr.ActorsOf(webObject(), noTime); len(got) != 0 {
		t.Fatalf("alice and bob both scaled, and no time says who was last: %+v, want nobody", got)
	}
}

// A request that named no field manager was managed under its user
// agent's program name; an impersonated user is named beside the one who
// made the request.
func TestAuditTrailDefaultManagerAndImpersonation(t *testing.T) {
	tr := wholeTrail(0)
	line := auditLine("1", "admin", "update", "/apis/apps/v1/namespaces/shop/deployments/web", "deployments", "shop", "web", "", 200,
		"2026-12-06T04:00:00.100000Z", "2026-12-06T04:00:00.120000Z", `,"impersonatedUser":{"username":"alice"}`)
	tr.addLines([]byte(line + "\n"))
	got := tr.ActorsOf(webObject(), Writer{Manager: "kubectl", Operation: "Update", Time: "2026-12-06T04:00:00Z"})
	if len(got) != 1 || got[0].User != "admin" || got[0].As != "alice" || !strings.HasPrefix(got[0].String(), "admin as alice") {
		t.Fatalf("got %+v", got)
	}
	if got := tr.ActorsOf(webObject(), Writer{Manager: "helm", Operation: "Update", Time: "2026-12-06T04:00:00Z"}); len(got) != 0 {
		t.Fatalf("kubectl's request was matched to helm: %+v", got)
	}
}

// Bodies a Request-level policy logs are read past, never kept: a
// Secret's data appears nowhere in the trail.
func TestAuditTrailKeepsNoBody(t *testing.T) {
	tr := NewAuditTrail(0)
	line := strings.Replace(auditLine("1", "alice", "update", "/api/v1/namespaces/shop/secrets/db?fieldManager=kubectl-edit", "secrets", "shop", "db", "", 200,
		"2026-12-06T04:00:00.100000Z", "2026-12-06T04:00:00.120000Z",
		`,"requestObject":{"kind":"Secret","data":{"password":"aHVudGVyMg=="},"stringData":{"token":"s3cr3t-v4lue"}},"responseObject":{"data":{"password":"aHVudGVyMg=="}},"annotations":{"x":"s3cr3t-v4lue"}`),
		`"apiGroup":"apps"`, `"apiGroup":""`, 1)
	tr.addLines([]byte(line + "\n"))
	if len(tr.writes) != 1 {
		t.Fatalf("kept %d writes, want 1", len(tr.writes))
	}
	dump := fmt.Sprintf("%#v", tr.writes)
	for _, secret := range []string{"aHVudGVyMg==", "s3cr3t-v4lue", "password"} {
		if strings.Contains(dump, secret) {
			t.Fatalf("the trail holds %q from a request body: %s", secret, dump)
		}
	}
}

// However busy the cluster, the trail keeps its newest writes only.
func TestAuditTrailIsBounded(t *testing.T) {
	tr := wholeTrail(3)
	var b strings.Builder
	for i := range 10 {
		b.WriteString(auditLine(fmt.Sprint(i), fmt.Sprintf("user%d", i), "patch", "/apis/apps/v1/namespaces/shop/deployments/web?fieldManager=m", "deployments", "shop", "web", "", 200,
			fmt.Sprintf("2026-12-06T04:00:%02d.100000Z", i), fmt.Sprintf("2026-12-06T04:00:%02d.200000Z", i), "") + "\n")
	}
	tr.addLines([]byte(b.String()))
	if k := tr.kept(); len(k) != 3 || k[0].actor.User != "user7" || k[2].actor.User != "user9" || len(tr.writes) >= 6 {
		t.Fatalf("kept %d writes from %s (%d held), want the newest 3", len(k), k[0].actor.User, len(tr.writes))
	}
	// The oldest ones are not matched, though still held until the next trim.
	if got := tr.ActorsOf(webObject(), Writer{Manager: "m", Operation: "Update", Time: "2026-12-06T04:00:06Z"}); len(got) != 0 {
		t.Fatalf("a write past keep was matched: %+v", got)
	}
}

// The log file is read where it grew: whole lines only, a rotation
// noticed, an unreadable file an error that keeps what was read.
func TestAuditTrailFollowsTheLogFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.log")
	ev := func(user, sec string) string {
		return auditLine(user, user, "patch", "/apis/apps/v1/namespaces/shop/deployments/web?fieldManager=kubectl-edit", "deployments", "shop", "web", "", 200,
			"2026-12-06T05:00:"+sec+".100000Z", "2026-12-06T05:00:"+sec+".200000Z", "")
	}
	write := func(s string, flag int) {
		f, err := os.OpenFile(path, flag|os.O_WRONLY|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteString(s); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	who := func(tr *AuditTrail, sec string) string {
		got := tr.ActorsOf(webObject(), Writer{Manager: "kubectl-edit", Operation: "Update", Time: "2026-12-06T05:00:" + sec + "Z"})
		if len(got) != 1 {
			return fmt.Sprint(got)
		}
		return got[0].User
	}
	tr := NewAuditTrail(0)
	tr.SetComplete(true)
	tr.FollowFile(path)
	if err := tr.Refresh(); err == nil {
		t.Fatal("a missing audit log read as empty")
	}
	write(primer+"\n", os.O_TRUNC)
	if err := tr.Refresh(); err != nil {
		t.Fatal(err)
	}
	write(ev("alice", "01")+"\n"+ev("bob", "02")[:40], os.O_APPEND)
	if err := tr.Refresh(); err != nil {
		t.Fatal(err)
	}
	if who(tr, "01") != "alice" || tr.Malformed() != 0 || len(tr.writes) != 1 {
		t.Fatalf("after the first read: %s, %d malformed, %d writes", who(tr, "01"), tr.Malformed(), len(tr.writes))
	}
	write(ev("bob", "02")[40:]+"\n", os.O_APPEND)
	if err := tr.Refresh(); err != nil {
		t.Fatal(err)
	}
	if who(tr, "02") != "bob" {
		t.Fatalf("the line finished later was not read whole: %s", who(tr, "02"))
	}
	// A line lands just before the rotation: it is still read.
	write(ev("dave", "04")+"\n", os.O_APPEND)
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	write(ev("carol", "03")+"\n", os.O_TRUNC)
	if err := tr.Refresh(); err != nil {
		t.Fatal(err)
	}
	if who(tr, "03") != "carol" || who(tr, "01") != "alice" || who(tr, "04") != "dave" {
		t.Fatalf("after rotation: %s, %s and %s", who(tr, "03"), who(tr, "01"), who(tr, "04"))
	}
	os.Remove(path)
	if err := tr.Refresh(); err == nil || who(tr, "03") != "carol" {
		t.Fatalf("a vanished log: %v, kept %s", err, who(tr, "03"))
	}
}

// A read that starts inside the file begins at a whole line: at the
// offset when a line starts there, else after the next newline.
func TestAuditFileStartsAtAWholeLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte("aaa\nbbb\nccc"), 0o600); err != nil {
		t.Fatal(err)
	}
	fh, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	for from, want := range map[int64]int64{4: 4, 5: 8, 8: 8, 9: 11} {
		f := &auditFile{path: path, fh: fh, offset: from}
		if err := f.skipToLine(); err != nil || f.offset != want {
			t.Errorf("from %d: offset %d (%v), want %d", from, f.offset, err, want)
		}
	}
}

// The webhook backend's posts need the bearer token; anything else is
// refused and adds nothing.
func TestAuditWebhookHandler(t *testing.T) {
	tr := NewAuditTrail(0)
	srv := httptest.NewServer(tr.Handler(func() (string, error) { return "t0ken", nil }, nil))
	defer srv.Close()
	list := `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[` + auditLine("1", "alice", "patch", "/apis/apps/v1/namespaces/shop/deployments/web?fieldManager=kubectl-edit", "deployments", "shop", "web", "", 200,
		"2026-12-06T05:00:01.100000Z", "2026-12-06T05:00:01.200000Z", "") + `]}`
	post := func(method, auth string, body []byte) int {
		req, _ := http.NewRequest(method, srv.URL, bytes.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, c := range []struct {
		method, auth string
		body         []byte
		want         int
	}{
		{"POST", "", []byte(list), 401},
		{"POST", "Bearer wrong", []byte(list), 401},
		{"GET", "Bearer t0ken", nil, 405},
		{"POST", "Bearer t0ken", []byte(`{"kind":"Pod"}`), 400},
		{"POST", "Bearer t0ken", bytes.Repeat([]byte(" "), auditPostLimit+1), 413},
	} {
		if got := post(c.method, c.auth, c.body); got != c.want {
			t.Fatalf("%s with %q: %d, want %d", c.method, c.auth, got, c.want)
		}
	}
	if len(tr.writes) != 0 {
		t.Fatalf("refused posts added %d writes", len(tr.writes))
	}
	if got := post("POST", "Bearer t0ken", []byte(list)); got != 200 || len(tr.writes) != 1 {
		t.Fatalf("the apiserver's post: %d, %d writes", got, len(tr.writes))
	}
}
