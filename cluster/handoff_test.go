package cluster

import (
	"testing"
	"time"

	"github.com/tenure-io/tenure/fsm"
	"github.com/tenure-io/tenure/test/harness"
)

// When the first waiter for a freed key may no longer have it (prohibited
// after it queued), it is told so and the key goes to the next waiter at
// once, not at the end of that waiter's wait: whether the prohibition
// committed before the release (the hand-off skips the waiter) or in the
// same batch (the refused hand-off passes the key on).
func TestProposerHandoffSkipsRefusedWaiter(t *testing.T) {
	for _, tt := range []struct {
		name      string
		sameBatch bool
	}{
		{"prohibited before the release", false},
		{"prohibited in the release's batch", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gated := 0
			if tt.sameBatch {
				gated = 4 // the batch after B and C queued
			}
			g := newGatedProposer(t, gated)
			ctx := harness.Context(t, 10*time.Second)
			g.grantKToA(t, ctx)
			wait := time.Now().Add(60 * time.Second) // far beyond the test's context
			b := g.queueWaiter(t, ctx, "B", wait, 1)
			c := g.queueWaiter(t, ctx, "C", wait, 2)
			prohibit := &op{cmd: fsm.SetKeyControl{Key: "k", Control: fsm.KeyControl{Prohibited: []string{"B"}}}}
			release := &op{cmd: fsm.Release{Key: "k", Holder: "A", Token: 1}}
			if tt.sameBatch {
				g.submit(ctx, &op{cmd: fsm.Acquire{Key: "other", Holder: "A", TTL: time.Minute}})
				<-g.entered
				p := g.submit(ctx, prohibit)
				g.queuedIn(t, 1) // the prohibition first, then the release
				r := g.submit(ctx, release)
				g.queuedIn(t, 2)
				close(g.gate)
				for _, ch := range []<-chan submitted{p, r} {
					if res := <-ch; res.err != nil {
						t.Fatal(res.err)
					}
				}
			} else {
				for _, o := range []*op{prohibit, release} {
					if res := <-g.submit(ctx, o); res.err != nil {
						t.Fatal(res.err)
					}
				}
			}
			if r := <-b; r.err != nil || r.res.Code != fsm.Prohibited {
				t.Fatalf("B: %v %v, want prohibited", r.res.Code, r.err)
			}
			wantGrantedTo(t, "C", c, ctx.Done(), "C still waits on a free key while its wait has most of a minute left")
		})
	}
}

// When a key is disabled while blocking acquirers wait for it, none of
// them is left waiting on a key nobody may have: once the holder lets it
// go, every waiter is told at once that the key is disabled.
func TestProposerHandoffDisabledKeyAnswersEveryWaiter(t *testing.T) {
	g := newGatedProposer(t, 0)
	ctx := harness.Context(t, 10*time.Second)
	g.grantKToA(t, ctx)
	wait := time.Now().Add(60 * time.Second)
	var waiters []<-chan submitted
	for i, h := range []string{"B", "C"} {
		waiters = append(waiters, g.queueWaiter(t, ctx, h, wait, int64(i+1)))
	}
	if r := <-g.submit(ctx, &op{cmd: fsm.SetKeyControl{Key: "k", Control: fsm.KeyControl{Disabled: true}}}); r.err != nil {
		t.Fatal(r.err)
	}
	if r := <-g.submit(ctx, &op{cmd: fsm.Release{Key: "k", Holder: "A", Token: 1}}); r.err != nil || r.res.Code != fsm.Freed {
		t.Fatalf("release of the ending lease: %v %v, want freed", r.res.Code, r.err)
	}
	for i, ch := range waiters {
		select {
		case r := <-ch:
			if r.err != nil || r.res.Code != fsm.Disabled {
				t.Errorf("waiter %d: %v %v, want disabled", i, r.res.Code, r.err)
			}
		case <-ctx.Done():
			t.Fatalf("waiter %d still waits on a disabled key with most of a minute left", i)
		}
	}
}
