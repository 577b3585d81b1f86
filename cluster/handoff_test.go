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
			if r := <-g.submit(ctx, &op{cmd: fsm.Acquire{Key: "k", Holder: "A", TTL: time.Minute}}); r.err != nil || r.res.Code != fsm.Granted {
				t.Fatalf("A: %v %v", r.res.Code, r.err)
			}
			wait := time.Now().Add(60 * time.Second) // far beyond the test's context
			b := g.submit(ctx, &op{cmd: fsm.Acquire{Key: "k", Holder: "B", TTL: time.Minute}, waitEnd: wait})
			harness.WaitUntil(t, 5*time.Second, "B to queue", func() bool { return g.p.waiting.Load() == 1 })
			c := g.submit(ctx, &op{cmd: fsm.Acquire{Key: "k", Holder: "C", TTL: time.Minute}, waitEnd: wait})
			harness.WaitUntil(t, 5*time.Second, "C to queue", func() bool { return g.p.waiting.Load() == 2 })
			prohibit := &op{cmd: fsm.SetKeyControl{Key: "k", Control: fsm.KeyControl{Prohibited: []string{"B"}}}}
			release := &op{cmd: fsm.Release{Key: "k", Holder: "A", Token: 1}}
			if tt.sameBatch {
				g.submit(ctx, &op{cmd: fsm.Acquire{Key: "other", Holder: "A", TTL: time.Minute}})
				<-g.entered
				p, r := g.submit(ctx, prohibit), g.submit(ctx, release)
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
			select {
			case r := <-c:
				if r.err != nil || r.res.Code != fsm.Granted || r.res.Lease.Holder != "C" {
					t.Fatalf("C: %v %+v %v, want granted", r.res.Code, r.res.Lease, r.err)
				}
			case <-ctx.Done():
				t.Fatal("C still waits on a free key while its wait has most of a minute left")
			}
		})
	}
}
