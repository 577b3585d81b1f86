package client

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// A handler's context reports the loss of the lease at the first Err after
// the local deadline, before any timer has run: a handler waking from a
// pause must not act on a key it no longer holds.
func TestHandlerContextErrChecksTheDeadline(t *testing.T) {
	k := newKeeper(nil)
	ctx, cancel := context.WithCancelCause(context.Background())
	l := &Lease{k: k, key: "k", holder: "h", token: 7, ctx: ctx, cancel: cancel, log: hclog.NewNullLogger(),
		state: leaseHeld, deadline: time.Now().Add(time.Hour)}
	k.leases[leaseID{l.holder, l.key}] = l
	hctx, stop := context.WithCancel(l.Context())
	defer stop()
	hc := leaseContext{hctx, l}
	if err := hc.Err(); err != nil {
		t.Fatalf("before the deadline: Err = %v, want nil", err)
	}
	k.mu.Lock()
	l.deadline = time.Now().Add(-time.Millisecond) // as after a pause: no timer has fired
	k.mu.Unlock()
	if err := hc.Err(); !errors.Is(err, context.Canceled) {
		t.Fatalf("after the deadline: Err = %v, want context.Canceled", err)
	}
	select {
	case <-hc.Done():
	default:
		t.Fatal("after Err reported the loss, Done is still open")
	}
	if err := l.Err(); !errors.Is(err, ErrLeaseExpiredLocally) {
		t.Fatalf("lease Err = %v, want ErrLeaseExpiredLocally", err)
	}
}
