package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// A lease's context, and a Worker handler's (derived from it), report the
// loss of the lease at the first Err after the local deadline, before any
// timer has run: a holder waking from a pause must not act on a key it no
// longer holds.
func TestLeaseContextErrChecksTheDeadline(t *testing.T) {
	k := newKeeper(nil)
	ctx, cancel := context.WithCancelCause(context.Background())
	l := &Lease{k: k, key: "k", holder: "h", token: 7, ctx: ctx, cancel: cancel, log: hclog.NewNullLogger(),
		state: leaseHeld, deadline: time.Now().Add(time.Hour)}
	k.leases[leaseID{l.holder, l.key}] = l
	lc := l.Context()
	hctx, stop := context.WithCancel(lc)
	defer stop()
	hc := leaseContext{hctx, l} // as package worker wraps a handler's (handlerContext)
	if err := lc.Err(); err != nil {
		t.Fatalf("before the deadline: Err = %v, want nil", err)
	}
	k.mu.Lock()
	l.deadline = time.Now().Add(-time.Millisecond) // as after a pause: no timer has fired
	k.mu.Unlock()
	if err := lc.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("after the deadline: lease context Err = %v, want context.Canceled", err)
	}
	for name, c := range map[string]context.Context{"lease": lc, "handler": hc} {
		select {
		case <-c.Done():
		default:
			t.Fatalf("after Err reported the loss, the %s context's Done is still open", name)
		}
		if !errors.Is(c.Err(), context.Canceled) {
			t.Fatalf("%s context Err = %v, want context.Canceled", name, c.Err())
		}
	}
	if err := l.Err(); !errors.Is(err, ErrLeaseExpiredLocally) {
		t.Fatalf("lease Err = %v, want ErrLeaseExpiredLocally", err)
	}
}
