package cluster_test

import (
	"testing"
	"time"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// TestRestoreNeverGivesAKeyAnOlderToken: a backup taken while alice held
// app/rk, restored after bob had acquired it and released it, leaves
// app/rk free with bob's token: a key's tokens never go backwards, and
// alice (a zombie renewing her old token) is refused.
func TestRestoreNeverGivesAKeyAnOlderToken(t *testing.T) {
	c := inproc.Start(t, 3, inproc.Options{})
	leader := c.Node(c.Leader())
	ctx := harness.Context(t, 20*time.Second)
	alice, _, err := leader.Acquire(ctx, cluster.AcquireRequest{Secret: testSecret, Key: "app/rk", Holder: "alice", TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	backup, err := leader.Backup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leader.Release(ctx, "app/rk", "alice", testSecret, alice.Token); err != nil {
		t.Fatal(err)
	}
	bob, _, err := leader.Acquire(ctx, cluster.AcquireRequest{Secret: testSecret, Key: "app/rk", Holder: "bob", TTL: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leader.Release(ctx, "app/rk", "bob", testSecret, bob.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := leader.RestoreSnapshot(ctx, backup, cluster.RestoreOptions{}); err != nil {
		t.Fatalf("restore: %v", err)
	}
	got, err := leader.Get(ctx, "app/rk", cluster.Linearizable)
	if err != nil || got.Held || got.Token != bob.Token {
		t.Fatalf("app/rk after the restore: %+v, %v; want free with bob's token %d (alice had %d before)", got.Lease, err, bob.Token, alice.Token)
	}
	if _, err := leader.Renew(ctx, "app/rk", "alice", testSecret, alice.Token); err == nil {
		t.Fatalf("alice renewed token %d after the restore, below bob's %d", alice.Token, bob.Token)
	}
	next, _, err := leader.Acquire(ctx, cluster.AcquireRequest{Secret: testSecret, Key: "app/rk", Holder: "carol", TTL: 30 * time.Second})
	if err != nil || next.Token <= bob.Token {
		t.Fatalf("next grant of app/rk: %+v, %v; want a token above %d", next.Lease, err, bob.Token)
	}
}
