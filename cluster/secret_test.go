package cluster_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-io/tenure/cluster"
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
