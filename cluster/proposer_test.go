package cluster

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/lessor"
	metricset "github.com/tenure-io/tenure/cluster/internal/metrics"
	"github.com/tenure-io/tenure/fsm"
	"github.com/tenure-io/tenure/test/harness"
)

// gatedProposer runs a proposer over a bare Machine whose apply blocks on
// the gate at the gated-th batch, so a test can line up what arrives while
// a batch commits.
type gatedProposer struct {
	p       *proposer
	m       *fsm.Machine
	entered chan struct{} // closed when the gated batch starts to apply
	gate    chan struct{} // close to let it apply
	entries atomic.Int64  // the batches applied
}

func newGatedProposer(t *testing.T, gated int) *gatedProposer {
	return newGatedProposerSize(t, gated, 64)
}

func newGatedProposerSize(t *testing.T, gated, maxPending int) *gatedProposer {
	t.Helper()
	g := &gatedProposer{m: fsm.New(), entered: make(chan struct{}), gate: make(chan struct{})}
	var index uint64
	apply := func(c fsm.Command) (any, error) {
		index++
		g.entries.Add(1)
		if int(index) == gated {
			close(g.entered)
			<-g.gate
		}
		return g.m.Apply(&raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: fsm.Encode(c)}), nil
	}
	l := lessor.New(SystemClock{})
	l.Promote(nil, nil)
	g.p = newProposer(&proposer{apply: apply, machine: g.m, lessor: l, log: hclog.NewNullLogger(),
		metrics: metricset.New(metricset.Config{}), term: 1, maxBatch: 64, maxPending: maxPending})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		g.p.run(ctx, SystemClock{})
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return g
}

type submitted struct {
	res fsm.Result
	err error
}

func (g *gatedProposer) submit(ctx context.Context, o *op) <-chan submitted {
	ch := make(chan submitted, 1)
	go func() {
		r, err := g.p.submit(ctx, o)
		ch <- submitted{r, err}
	}()
	return ch
}

// queuedIn waits until n ops sit in the proposer's input.
func (g *gatedProposer) queuedIn(t *testing.T, n int) {
	t.Helper()
	harness.WaitUntil(t, 5*time.Second, "ops to queue", func() bool { return len(g.p.in) == n })
}

// grantKToA has A acquire key k for a minute and fails the test unless
// it is granted.
func (g *gatedProposer) grantKToA(t *testing.T, ctx context.Context) {
	t.Helper()
	if r := <-g.submit(ctx, &op{cmd: fsm.Acquire{Key: "k", Holder: "A", TTL: time.Minute}}); r.err != nil || r.res.Code != fsm.Granted {
		t.Fatalf("A: %v %v", r.res.Code, r.err)
	}
}

// queueWaiter submits holder's blocking acquire of key k, waiting until
// wait, and waits until it is queued as the n-th waiter.
func (g *gatedProposer) queueWaiter(t *testing.T, ctx context.Context, holder string, wait time.Time, n int64) <-chan submitted {
	t.Helper()
	ch := g.submit(ctx, &op{cmd: fsm.Acquire{Key: "k", Holder: holder, TTL: time.Minute}, waitEnd: wait})
	harness.WaitUntil(t, 5*time.Second, holder+" to queue", func() bool { return g.p.waiting.Load() == n })
	return ch
}

// wantGrantedTo fails the test unless ch answers with the key granted to
// holder before giveUp fires; stuck says what went wrong if it fires.
func wantGrantedTo[T any](t *testing.T, holder string, ch <-chan submitted, giveUp <-chan T, stuck string) {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil || r.res.Code != fsm.Granted || r.res.Lease.Holder != holder {
			t.Fatalf("%s: code %v lease %+v err %v, want granted to %s", holder, r.res.Code, r.res.Lease, r.err, holder)
		}
	case <-giveUp:
		t.Fatal(stuck)
	}
}

// A blocking acquire that arrives while the key's holder is being granted
// it, and is batched with the release that frees the key, is granted right
// after, not at the end of its wait (it waits without an entry, and the
// release hands the key to it).
func TestProposerWaiterQueuedInReleaseBatchIsGranted(t *testing.T) {
	g := newGatedProposer(t, 1)
	ctx := harness.Context(t, 10*time.Second)
	a := g.submit(ctx, &op{cmd: fsm.Acquire{Key: "k", Holder: "A", TTL: time.Minute}})
	<-g.entered
	b := g.submit(ctx, &op{cmd: fsm.Acquire{Key: "k", Holder: "B", TTL: time.Minute}, waitEnd: time.Now().Add(time.Minute)})
	g.queuedIn(t, 1)
	g.submit(ctx, &op{cmd: fsm.Release{Key: "k", Holder: "A", Token: 1}})
	g.queuedIn(t, 2)
	close(g.gate)
	if r := <-a; r.err != nil || r.res.Code != fsm.Granted {
		t.Fatalf("A: %v %v", r.res.Code, r.err)
	}
	wantGrantedTo(t, "B", b, time.After(5*time.Second), "B still waits for a key that is free")
}

// A blocking acquirer that goes away before its op is queued is never
// queued, so it cannot be granted a key nobody will use.
func TestProposerCancelledBeforeQueueingIsNotQueued(t *testing.T) {
	g := newGatedProposer(t, 2)
	ctx := harness.Context(t, 10*time.Second)
	if r := <-g.submit(ctx, &op{cmd: fsm.Acquire{Key: "k", Holder: "A", TTL: time.Minute}}); r.err != nil {
		t.Fatal(r.err)
	}
	g.submit(ctx, &op{cmd: fsm.Acquire{Key: "other", Holder: "A", TTL: time.Minute}})
	<-g.entered
	bctx, cancel := context.WithCancel(ctx)
	b := g.submit(bctx, &op{cmd: fsm.Acquire{Key: "k", Holder: "B", TTL: time.Minute}, waitEnd: time.Now().Add(time.Minute)})
	g.queuedIn(t, 1)
	cancel()
	<-b
	close(g.gate)
	// Once a later op is answered, B's batch has been settled.
	if r := <-g.submit(ctx, &op{cmd: fsm.Acquire{Key: "sync", Holder: "A", TTL: time.Minute}}); r.err != nil {
		t.Fatal(r.err)
	}
	if n := g.p.waiting.Load(); n != 0 {
		t.Fatalf("%d waiters queued, want 0: the cancelled caller was queued", n)
	}
}

// A batch never exceeds maxBatch commands, hand-offs to waiters included,
// and what does not fit is proposed next without waiting for new work.
func TestProposerBatchesStayWithinMaxBatch(t *testing.T) {
	m := fsm.New()
	var sizes []int
	var index uint64
	apply := func(c fsm.Command) (any, error) {
		index++
		sizes = append(sizes, len(c.(fsm.Batch).Commands))
		return m.Apply(&raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: fsm.Encode(c)}), nil
	}
	l := lessor.New(SystemClock{})
	l.Promote(nil, nil)
	p := newProposer(&proposer{apply: apply, machine: m, lessor: l, log: hclog.NewNullLogger(),
		metrics: metricset.New(metricset.Config{}), term: 1, maxBatch: 4, maxPending: 256})
	// Three keys held by A, each with a queued waiter; then A releases all
	// three at once: three releases and three hand-offs, six commands.
	var ops, waiters []*op
	for _, key := range []string{"a", "b", "c"} {
		apply(fsm.Batch{Commands: []fsm.Command{fsm.Acquire{Key: key, Holder: "A", TTL: time.Minute}}})
		w := &op{cmd: fsm.Acquire{Key: key, Holder: "B", TTL: time.Minute}, waitEnd: time.Now().Add(time.Minute),
			done: make(chan opResult, 1), queued: true, timer: time.AfterFunc(time.Hour, func() {})}
		p.waiters[key] = []*op{w}
		p.waiting.Add(1)
		waiters = append(waiters, w)
		o := &op{cmd: fsm.Release{Key: key, Holder: "A", Token: m.Get(key).Token}, done: make(chan opResult, 1)}
		ops = append(ops, o)
		p.in <- o
	}
	sizes = nil
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.run(ctx, SystemClock{})
	}()
	for _, o := range append(ops, waiters...) {
		select {
		case r := <-o.done:
			if r.err != nil {
				t.Fatalf("op: %v", r.err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("an op that did not fit in a batch was never proposed")
		}
	}
	cancel()
	<-done
	for _, n := range sizes {
		if n > 4 {
			t.Fatalf("batch sizes %v: one is above maxBatch 4", sizes)
		}
	}
	for _, key := range []string{"a", "b", "c"} {
		if l := m.Get(key); !l.Held || l.Holder != "B" {
			t.Fatalf("%s: %+v, want held by the waiter B", key, l)
		}
	}
}

// Past max-pending queued writes the leader refuses new ones at once with
// ErrOverloaded (429 over HTTP) instead of queueing without bound.
func TestProposerOverloadIsRefused(t *testing.T) {
	g := newGatedProposerSize(t, 1, 2)
	ctx := harness.Context(t, 10*time.Second)
	g.submit(ctx, &op{cmd: fsm.Acquire{Key: "a", Holder: "h", TTL: time.Minute}})
	<-g.entered // the first batch is committing
	g.submit(ctx, &op{cmd: fsm.Acquire{Key: "b", Holder: "h", TTL: time.Minute}})
	g.submit(ctx, &op{cmd: fsm.Acquire{Key: "c", Holder: "h", TTL: time.Minute}})
	g.queuedIn(t, 2)
	if r := <-g.submit(ctx, &op{cmd: fsm.Acquire{Key: "d", Holder: "h", TTL: time.Minute}}); !errors.Is(r.err, ErrOverloaded) {
		t.Fatalf("a write past max-pending: %v %v, want ErrOverloaded", r.res.Code, r.err)
	}
	close(g.gate)
}

// The blocking acquirers queued on the leader are bounded: past
// maxWaiters, a blocking acquire of a held key is answered ErrOverloaded
// (nothing done, retry later) instead of queueing; one that finds the key
// free is still granted, and a queued one is still handed the key.
func TestProposerBoundsWaiters(t *testing.T) {
	g := newGatedProposer(t, 0)
	g.p.maxWaiters = 1
	ctx := harness.Context(t, 10*time.Second)
	held := <-g.submit(ctx, &op{cmd: fsm.Acquire{Key: "k", Holder: "a", TTL: time.Minute}})
	if held.err != nil || held.res.Code != fsm.Granted {
		t.Fatalf("first acquire: %+v %v", held.res, held.err)
	}
	wait := time.Now().Add(time.Minute)
	first := g.submit(ctx, &op{cmd: fsm.Acquire{Key: "k", Holder: "b", TTL: time.Minute}, waitEnd: wait})
	harness.WaitUntil(t, 5*time.Second, "the first waiter to queue", func() bool { return g.p.waiting.Load() == 1 })
	second := <-g.submit(ctx, &op{cmd: fsm.Acquire{Key: "k", Holder: "c", TTL: time.Minute}, waitEnd: wait})
	if !errors.Is(second.err, ErrOverloaded) {
		t.Fatalf("a second waiter past the bound: %+v %v, want ErrOverloaded", second.res, second.err)
	}
	other := <-g.submit(ctx, &op{cmd: fsm.Acquire{Key: "free", Holder: "c", TTL: time.Minute}, waitEnd: wait})
	if other.err != nil || other.res.Code != fsm.Granted {
		t.Fatalf("a blocking acquire of a free key past the bound: %+v %v, want granted", other.res, other.err)
	}
	rel := <-g.submit(ctx, &op{cmd: fsm.Release{Key: "k", Holder: "a", Token: held.res.Lease.Token}})
	if rel.err != nil || rel.res.Code != fsm.Freed {
		t.Fatalf("release: %+v %v", rel.res, rel.err)
	}
	if got := <-first; got.err != nil || got.res.Code != fsm.Granted || got.res.Lease.Holder != "b" {
		t.Fatalf("the queued waiter: %+v %v, want granted to b", got.res, got.err)
	}
}

// Two releases of one key in one batch, the first refused (not the
// holder) and the second freeing it: the hand-off went with the first and
// was answered Held; the waiter must still get the key at once, not at the
// end of its wait.
func TestProposerWaiterGetsKeyFreedBySecondReleaseOfABatch(t *testing.T) {
	g := newGatedProposer(t, 2)
	ctx := harness.Context(t, 10*time.Second)
	g.grantKToA(t, ctx)
	b := g.queueWaiter(t, ctx, "B", time.Now().Add(time.Minute), 1)                   // no entry
	g.submit(ctx, &op{cmd: fsm.Acquire{Key: "other", Holder: "A", TTL: time.Minute}}) // entry 2, gated
	<-g.entered
	stale := g.submit(ctx, &op{cmd: fsm.Release{Key: "k", Holder: "Z", Token: 1}}) // not the holder
	g.queuedIn(t, 1)
	rel := g.submit(ctx, &op{cmd: fsm.Release{Key: "k", Holder: "A", Token: 1}})
	g.queuedIn(t, 2)
	close(g.gate)
	if r := <-stale; r.err != nil || r.res.Code != fsm.NotHolder {
		t.Fatalf("the stale release: %v %v, want not_holder", r.res.Code, r.err)
	}
	if r := <-rel; r.err != nil || r.res.Code != fsm.Freed {
		t.Fatalf("A's release: %v %v, want freed", r.res.Code, r.err)
	}
	r := <-b // the test's context (10s) ends long before B's wait (1m)
	if r.err != nil || r.res.Code != fsm.Granted || r.res.Lease.Holder != "B" {
		t.Fatalf("B: %v %v, want granted while its wait had most of a minute left", r.res.Code, r.err)
	}
}

// A waiter that was prohibited, then allowed again in the same batch as
// the release that frees the key, is granted it: the hand-off does not
// judge it by the controls read before the batch applied.
func TestProposerWaiterAllowedInTheReleaseBatchIsGranted(t *testing.T) {
	g := newGatedProposer(t, 3)
	ctx := harness.Context(t, 10*time.Second)
	<-g.submit(ctx, &op{cmd: fsm.Acquire{Key: "k", Holder: "A", TTL: time.Minute}})
	b := g.queueWaiter(t, ctx, "B", time.Now().Add(time.Minute), 1) // no entry
	<-g.submit(ctx, &op{cmd: fsm.SetKeyControl{Key: "k", Control: fsm.KeyControl{Prohibited: []string{"B"}}}})
	g.submit(ctx, &op{cmd: fsm.Acquire{Key: "other", Holder: "A", TTL: time.Minute}}) // entry 3, gated
	<-g.entered
	g.submit(ctx, &op{cmd: fsm.EditKeyControl{Key: "k", Allow: []string{"B"}}})
	g.queuedIn(t, 1)
	g.submit(ctx, &op{cmd: fsm.Release{Key: "k", Holder: "A", Token: 1}})
	g.queuedIn(t, 2)
	close(g.gate)
	if r := <-b; r.err != nil || r.res.Code != fsm.Granted {
		t.Fatalf("B: %v %v (controls at apply time: %+v), want granted", r.res.Code, r.err, g.m.Control("k"))
	}
}

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
				gated = 2 // the batch after B and C queued (without entries)
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

// A blocking acquire of a key another holder has changes nothing, so it
// waits in the key's queue without a log entry; the release that frees the
// key grants it in the release's own entry. A hand-off then costs one
// commit, not the waiter's entry plus the release's.
func TestProposerBlockingAcquireOfAHeldKeyWritesNoEntry(t *testing.T) {
	g := newGatedProposer(t, 0)
	entries := &g.entries
	ctx := harness.Context(t, 10*time.Second)
	g.grantKToA(t, ctx)
	before := entries.Load()
	b := g.queueWaiter(t, ctx, "B", time.Now().Add(time.Minute), 1)
	if n := entries.Load() - before; n != 0 {
		t.Fatalf("B's blocking acquire of a held key wrote %d entries, want 0", n)
	}
	if r := <-g.submit(ctx, &op{cmd: fsm.Release{Key: "k", Holder: "A", Token: 1}}); r.err != nil || r.res.Code != fsm.Freed {
		t.Fatalf("release: %v %v", r.res.Code, r.err)
	}
	wantGrantedTo(t, "B", b, time.After(5*time.Second), "B still waits for a key that is free")
	if n := entries.Load() - before; n != 1 {
		t.Fatalf("the hand-off took %d entries, want 1 (the release's, with B's grant)", n)
	}
}

// A blocking acquire that might not be refused goes through the log as
// before: a key free, or held by the acquirer itself, or disabled.
func TestProposerBlockingAcquireThatMayChangeTheKeyIsProposed(t *testing.T) {
	g := newGatedProposer(t, 0)
	ctx := harness.Context(t, 10*time.Second)
	g.grantKToA(t, ctx)
	wait := time.Now().Add(time.Minute)
	if r := <-g.submit(ctx, &op{cmd: fsm.Acquire{Key: "k", Holder: "A", TTL: time.Minute}, waitEnd: wait}); r.err != nil || r.res.Code != fsm.Kept {
		t.Fatalf("A again: %v %v, want kept", r.res.Code, r.err)
	}
	if r := <-g.submit(ctx, &op{cmd: fsm.SetKeyControl{Key: "k", Control: fsm.KeyControl{Disabled: true}}}); r.err != nil {
		t.Fatal(r.err)
	}
	if r := <-g.submit(ctx, &op{cmd: fsm.Acquire{Key: "k", Holder: "B", TTL: time.Minute}, waitEnd: wait}); r.err != nil || r.res.Code != fsm.Disabled {
		t.Fatalf("B on a disabled key: %v %v, want disabled", r.res.Code, r.err)
	}
	if g.p.waiting.Load() != 0 {
		t.Fatalf("%d waiters queued, want 0", g.p.waiting.Load())
	}
}

// A waiter queued without an entry whose wait ends is answered through the
// log, not from the leader's state alone: a leader cut off from the others
// must not tell it who holds the key (the answer fails with the lost
// leadership instead), as when its refused acquire had an entry.
func TestProposerWaiterWithoutEntryIsAnsweredThroughTheLog(t *testing.T) {
	g := newGatedProposer(t, 0)
	ctx := harness.Context(t, 10*time.Second)
	g.grantKToA(t, ctx)
	before := g.entries.Load()
	b := g.queueWaiter(t, ctx, "B", time.Now().Add(200*time.Millisecond), 1)
	select {
	case r := <-b:
		if r.err != nil || r.res.Code != fsm.Held || r.res.Lease.Holder != "A" {
			t.Fatalf("B at the end of its wait: %v %v, want held by A", r.res.Code, r.err)
		}
	case <-ctx.Done():
		t.Fatal("B's wait did not end")
	}
	if n := g.entries.Load() - before; n != 1 {
		t.Fatalf("B's answer took %d entries, want 1", n)
	}
}

// A blocking acquire refused in the same batch as the release that frees
// the key (an earlier command of the batch touched the key, so it could
// not wait without an entry) is queued after the batch and granted in the
// next, not at the end of its wait.
func TestProposerWaiterRefusedInTheReleaseBatchIsGranted(t *testing.T) {
	g := newGatedProposer(t, 2)
	ctx := harness.Context(t, 10*time.Second)
	g.grantKToA(t, ctx)
	g.submit(ctx, &op{cmd: fsm.Acquire{Key: "other", Holder: "A", TTL: time.Minute}}) // entry 2, gated
	<-g.entered
	g.submit(ctx, &op{cmd: fsm.Acquire{Key: "k", Holder: "A", TTL: time.Minute}}) // kept; touches k
	g.queuedIn(t, 1)
	b := g.submit(ctx, &op{cmd: fsm.Acquire{Key: "k", Holder: "B", TTL: time.Minute}, waitEnd: time.Now().Add(time.Minute)})
	g.queuedIn(t, 2)
	g.submit(ctx, &op{cmd: fsm.Release{Key: "k", Holder: "A", Token: 1}})
	g.queuedIn(t, 3)
	close(g.gate)
	wantGrantedTo(t, "B", b, ctx.Done(), "B still waits for a key that is free")
}
