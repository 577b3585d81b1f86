package cluster_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// Guarantee: knowing a lease's holder and token is not enough to act on
// it. Without its secret an acquisition under the holder's name is held
// off (the same lease is not handed back), and a renewal or a release is
// refused; the lease is left as it was.
func TestLeaseSecretIsNeededToActAsHolder(t *testing.T) {
	c := inproc.Start(t, 1, inproc.Options{})
	ctx := harness.Context(t, 20*time.Second)
	l := acquire(t, c, "k", "h1", time.Minute)
	n := c.Node(c.Leader())
	const other = "0123456789abcdef0123456789abcdef"

	_, _, err := n.Acquire(ctx, cluster.AcquireRequest{Key: "k", Holder: "h1", TTL: time.Minute, Secret: other,
		Metadata: map[string]string{"addr": "evil:1"}})
	var held *cluster.HeldError
	if !errors.As(err, &held) || !held.WrongSecret || !errors.Is(err, cluster.ErrHeld) {
		t.Fatalf("acquire under h1's name with another secret = %v, want held (wrong secret)", err)
	}
	if _, err := n.Renew(ctx, "k", "h1", other, l.Token); !errors.Is(err, cluster.ErrWrongSecret) {
		t.Fatalf("renewal with another secret = %v, want %v", err, cluster.ErrWrongSecret)
	}
	if _, err := n.Release(ctx, "k", "h1", other, l.Token); !errors.Is(err, cluster.ErrWrongSecret) {
		t.Fatalf("release with another secret = %v, want %v", err, cluster.ErrWrongSecret)
	}
	if _, err := n.Renew(ctx, "k", "h1", "", l.Token); !errors.Is(err, cluster.ErrInvalid) {
		t.Fatalf("renewal without a secret = %v, want %v", err, cluster.ErrInvalid)
	}
	got, err := n.Get(ctx, "k", cluster.Linearizable)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Held || got.Token != l.Token || got.Metadata != nil || got.ModifyIndex != l.ModifyIndex {
		t.Fatalf("lease after the refusals = %+v, want it unchanged", *got.Lease)
	}

	// The acquirer, with its secret, retries and keeps its token.
	again, created, err := n.Acquire(ctx, cluster.AcquireRequest{Key: "k", Holder: "h1", TTL: time.Minute, Secret: testSecret})
	if err != nil || created || again.Token != l.Token {
		t.Fatalf("retry with the secret = token %d created %v err %v, want token %d kept", again.Token, created, err, l.Token)
	}
	if _, err := n.Renew(ctx, "k", "h1", testSecret, l.Token); err != nil {
		t.Fatalf("renewal with the secret: %v", err)
	}
	if freed, err := n.Release(ctx, "k", "h1", testSecret, l.Token); err != nil || !freed {
		t.Fatalf("release with the secret = %v, %v; want freed", freed, err)
	}
}

// A lease acquired before servers kept secrets (an Acquire of payload
// version 1, without a hash, as an older leader wrote it) cannot be
// renewed, released or taken back by its holder's name after the
// upgrade: it can only end at its deadline, or by an operator.
func TestLeaseWithoutSecretCannotBeActedOn(t *testing.T) {
	c := inproc.Start(t, 1, inproc.Options{})
	ctx := harness.Context(t, 20*time.Second)
	n := c.Node(c.Leader())
	old := fsm.Encode(fsm.Acquire{Key: "old", Holder: "h", TTL: time.Minute, Time: time.Now().UnixNano()})
	if err := cluster.RaftOf(n).Apply(old, 5*time.Second).Error(); err != nil {
		t.Fatal(err)
	}
	l := cluster.MachineOf(n).Get("old")
	if l == nil || !l.Held || l.SecretHash != "" {
		t.Fatalf("the old-format acquisition left %+v, want a held lease without a secret hash", l)
	}
	if _, err := n.Renew(ctx, "old", "h", testSecret, l.Token); !errors.Is(err, cluster.ErrWrongSecret) {
		t.Errorf("renewal of a lease without a secret = %v, want %v", err, cluster.ErrWrongSecret)
	}
	if _, err := n.Release(ctx, "old", "h", testSecret, l.Token); !errors.Is(err, cluster.ErrWrongSecret) {
		t.Errorf("release of a lease without a secret = %v, want %v", err, cluster.ErrWrongSecret)
	}
	_, _, err := n.Acquire(ctx, cluster.AcquireRequest{Key: "old", Holder: "h", TTL: time.Minute, Secret: testSecret})
	if !errors.Is(err, cluster.ErrHeld) {
		t.Errorf("acquire by its holder's name = %v, want %v", err, cluster.ErrHeld)
	}
	if got := cluster.MachineOf(n).Get("old"); !got.Held || got.Token != l.Token || got.ModifyIndex != l.ModifyIndex {
		t.Errorf("the lease after the refusals = %+v, want it unchanged", got)
	}
	// An operator still ends it.
	if _, err := n.Revoke(ctx, "old", true); err != nil {
		t.Fatalf("forced revoke: %v", err)
	}
	if got := cluster.MachineOf(n).Get("old"); got.Held {
		t.Errorf("the lease is still held after a forced revoke")
	}
}
