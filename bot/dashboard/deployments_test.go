package dashboard

import (
	"strings"
	"testing"
	"time"
)

// Two deployments at one instance keep each other's rows: each writes its
// own, keeps the other's as they are (the same target name in both is two
// rows), and notes when it last ran only while the dashboard is shared,
// renewing the note twice a day, so a shared dashboard costs at most two
// writes a day for time alone and a lone one none. The rows of a
// deployment not heard from for a day go. One that cannot tell its
// deployment keeps only its own config's rows, as before.
func TestDeploymentsShareADashboard(t *testing.T) {
	now := time.Date(2026, 12, 8, 3, 17, 0, 0, time.UTC)
	eu := map[string]dashRow{"shop-prod": {Target: "shop-prod", State: rowPR, PR: 7}}
	alone := mergeState(dashState{}, eu, []string{"shop-prod"}, "eu", now)
	if alone.Seen != nil || len(alone.Rows) != 1 || alone.Rows[0].Deployment != "eu" {
		t.Fatalf("a lone deployment's state: %+v", alone)
	}

	us := map[string]dashRow{"shop-prod": {Target: "shop-prod", State: rowInSync}, "a-us": {Target: "a-us", State: rowInSync}}
	both := mergeState(alone, us, []string{"a-us", "shop-prod"}, "us", now)
	var got []string
	for _, r := range both.Rows {
		got = append(got, r.Target+"@"+r.Deployment)
	}
	if strings.Join(got, " ") != "a-us@us shop-prod@eu shop-prod@us" {
		t.Fatalf("rows %v", got)
	}
	if both.Seen["eu"] != "2026-12-08T03:00:00Z" || both.Seen["us"] != "2026-12-08T03:00:00Z" {
		t.Fatalf("notes %v", both.Seen)
	}
	// eu's next round with the same rows writes nothing; its note is
	// renewed only 12 hours on.
	for _, c := range []struct {
		after time.Duration
		same  bool
	}{{time.Hour, true}, {11 * time.Hour, true}, {12 * time.Hour, false}} {
		next := mergeState(both, eu, []string{"shop-prod"}, "eu", now.Add(c.after))
		if sameState(next, both) != c.same {
			t.Errorf("%s later: unchanged %v, want %v (%v)", c.after, !c.same, c.same, next.Seen)
		}
	}
	// us gone: a day after its last note eu drops its rows, and the
	// dashboard is eu's alone again.
	later := mergeState(both, eu, []string{"shop-prod"}, "eu", now.Add(23*time.Hour))
	if len(later.Rows) != 3 {
		t.Fatalf("us's rows went before a day: %+v", later.Rows)
	}
	gone := mergeState(later, eu, []string{"shop-prod"}, "eu", now.Add(24*time.Hour))
	if len(gone.Rows) != 1 || gone.Rows[0].Deployment != "eu" || gone.Seen != nil {
		t.Fatalf("a day after us's last note: %+v", gone)
	}
	// A process that cannot tell its deployment: its config's rows only.
	if blind := mergeState(both, us, []string{"a-us", "shop-prod"}, "", now); len(blind.Rows) != 2 || blind.Seen != nil {
		t.Fatalf("a process without a deployment: %+v", blind)
	}

	body, err := renderDashboard("", "", both)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| `shop-prod` (`eu`) | pull request open |", "| `shop-prod` (`us`) | in sync |"} {
		if !strings.Contains(body, want) {
			t.Errorf("no %q in:\n%s", want, body)
		}
	}
	if body, _ := renderDashboard("", "", alone); !strings.Contains(body, "| `shop-prod` | pull request open |") {
		t.Errorf("a lone deployment's rows name deployments:\n%s", body)
	}
}
