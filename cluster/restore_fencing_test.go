package cluster_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// TestRestoreNeverGivesAKeyAnOlderToken: a backup taken while alice held
// app/rk, restored after bob had acquired it and released it, leaves
// app/rk free, whether the cluster still has bob's record of the key or
// has forgotten it since (-free-key-retention): a key's tokens never go
// backwards, alice (a zombie renewing her old token) is refused, and the
// next grant is above bob's token.
func TestRestoreNeverGivesAKeyAnOlderToken(t *testing.T) {
	for _, tc := range []struct {
		name      string
		retention time.Duration // 0: the default, far longer than the test
		forgotten bool          // wait until the cluster has forgotten app/rk
	}{
		{name: "bob's record kept"},
		{name: "the key forgotten", retention: 200 * time.Millisecond, forgotten: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := inproc.Start(t, 3, inproc.Options{Tweak: func(cfg *cluster.Config) {
				if tc.retention > 0 {
					cfg.FreeKeyRetention = tc.retention
				}
			}})
			leader := c.Node(c.Leader())
			ctx := harness.Context(t, 20*time.Second)
			alice := acquireOn(t, ctx, leader, "app/rk", "alice", 30*time.Second)
			backup, err := leader.Backup(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := leader.Release(ctx, "app/rk", "alice", testSecret, alice.Token); err != nil {
				t.Fatal(err)
			}
			const bobSecret = "b0bb0bb0bb0bb0bb0bb0bb0bb0bb0bb0"
			bob, _, err := leader.Acquire(ctx, cluster.AcquireRequest{Secret: bobSecret, Key: "app/rk", Holder: "bob", TTL: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := leader.Release(ctx, "app/rk", "bob", bobSecret, bob.Token); err != nil {
				t.Fatal(err)
			}
			for tc.forgotten { // until retention forgets the free record of app/rk
				_, err := leader.Get(ctx, "app/rk", cluster.Linearizable)
				if errors.Is(err, cluster.ErrNotFound) {
					break
				}
				if ctx.Err() != nil {
					t.Fatalf("app/rk never forgotten: %v", err)
				}
				time.Sleep(20 * time.Millisecond) // polling with the deadline of ctx
			}
			if _, err := leader.RestoreSnapshot(ctx, backup, cluster.RestoreOptions{}); err != nil {
				t.Fatalf("restore: %v", err)
			}
			got, err := leader.Get(ctx, "app/rk", cluster.Linearizable)
			if err != nil {
				t.Fatalf("app/rk after the restore: %v", err)
			}
			if got.Held || got.Token < alice.Token || (!tc.forgotten && got.Token != bob.Token) {
				t.Errorf("app/rk after the restore: held %v by %q with token %d; want free (alice had %d, bob %d): tokens went %d, %d, %d",
					got.Held, got.Holder, got.Token, alice.Token, bob.Token, alice.Token, bob.Token, got.Token)
			}
			if _, err := leader.Renew(ctx, "app/rk", "alice", testSecret, alice.Token); err == nil {
				t.Errorf("zombie alice renewed token %d after the restore, below bob's %d", alice.Token, bob.Token)
			}
			next, _, err := leader.Acquire(ctx, cluster.AcquireRequest{Secret: testSecret, Key: "app/rk", Holder: "carol", TTL: 30 * time.Second})
			if err != nil || next.Token <= bob.Token {
				t.Errorf("next grant of app/rk: %+v, %v; want a token above bob's %d", next.Lease, err, bob.Token)
			}
		})
	}
}
