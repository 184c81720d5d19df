package idle

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/driftback/driftback/analyzer"
	"github.com/driftback/driftback/bot/app"
	"github.com/driftback/driftback/bot/pollstate"
	"github.com/driftback/driftback/cluster"
	"github.com/driftback/driftback/config"
)

// newPoll is a poll that has read the base head and objects.
func newPoll(base string, objs ...cluster.Object) *pollstate.Poll {
	return &pollstate.Poll{Place: app.Place{Target: config.Target{Name: "shop", Root: "overlays/prod"}, Log: slog.New(slog.DiscardHandler),
		BaseSHA: base}, Objs: objs}
}

func deployment(image string) cluster.Object {
	return cluster.Object{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web"}, "spec": map[string]any{"image": image}}}
}

// The memo alone decides idleness: a poll that reads what the last
// reconcile left is idle, unless a rerun was asked for; a live change or a
// new base commit (that cannot be loaded, so it counts as a move) is not.
// The branch is read only after a reconcile that stood back for it.
func TestMemoSaysWhenNothingMoved(t *testing.T) {
	ctx := context.Background()
	var mem Memory
	head, reads := "", 0
	branch := func(context.Context) string { reads++; return head }
	noLoad := func(context.Context, string) (*analyzer.Snapshot, error) { return nil, errors.New("not loadable") }
	first := newPoll("base1", deployment("web:1"))
	mem.Settle(ctx, first, noLoad)
	m, quiet, err := mem.Check(ctx, first, false, nil, branch)
	if err != nil || quiet {
		t.Fatalf("no memo yet: idle %v, %v", quiet, err)
	}
	mem.Remember(first, m, nil, false)

	again := newPoll("base1", deployment("web:1"))
	mem.Settle(ctx, again, noLoad)
	if _, quiet, err := mem.Check(ctx, again, false, nil, branch); err != nil || !quiet {
		t.Errorf("the same reads: idle %v, %v", quiet, err)
	}
	if _, quiet, _ := mem.Check(ctx, again, true, nil, branch); quiet {
		t.Error("a rerun was idle")
	}
	edited := newPoll("base1", deployment("web:2"))
	mem.Settle(ctx, edited, noLoad)
	if _, quiet, _ := mem.Check(ctx, edited, false, nil, branch); quiet {
		t.Error("a changed image was idle")
	}
	moved := newPoll("base2", deployment("web:1"))
	mem.Settle(ctx, moved, noLoad)
	if _, quiet, _ := mem.Check(ctx, moved, false, nil, branch); quiet {
		t.Error("a base commit that could not be compared was idle")
	}
	mem.Forget("shop")
	if _, quiet, _ := mem.Check(ctx, again, false, nil, branch); quiet {
		t.Error("idle after the memo was forgotten")
	}
	if reads != 0 {
		t.Errorf("the branch was read %d times, though no reconcile stood back for it", reads)
	}

	// A reconcile that stood back for the branch (a declined edit set
	// kept on it): idle while the branch stays, not once it is deleted
	// or moved.
	kept := newPoll("base1", deployment("web:1"))
	mem.Settle(ctx, kept, noLoad)
	m, _, _ = mem.Check(ctx, kept, false, nil, branch)
	kept.Kept, head = "c1", "c1"
	mem.Remember(kept, m, nil, false)
	for _, c := range []struct {
		head string
		idle bool
	}{{"c1", true}, {"", false}, {"c2", false}} {
		head = c.head
		if _, quiet, _ := mem.Check(ctx, again, false, nil, branch); quiet != c.idle {
			t.Errorf("branch head %q: idle %v, want %v", c.head, quiet, c.idle)
		}
	}
}

// A listing narrowed to some kinds covers a render only of those kinds.
func TestNarrowedReadCoversOnlyItsKinds(t *testing.T) {
	if !Covers(nil, []string{"Deployment"}) || !Covers([]string{"Deployment", "Service"}, []string{"Service"}) || Covers([]string{"Deployment"}, []string{"Service"}) {
		t.Error("Covers")
	}
}
