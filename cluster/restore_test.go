package cluster_test

import (
	"errors"
	"testing"
	"time"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// TestRestoreSnapshotThroughRaft: a backup restored into the running
// cluster brings back the backup's leases on every server, each held
// lease at a full TTL; leases held at the restore keep their holder; the
// next token is above every token handed out before the backup and
// since; the leader serves again when the call returns.
func TestRestoreSnapshotThroughRaft(t *testing.T) {
	c := inproc.Start(t, 3, inproc.Options{})
	li := c.Leader()
	leader := c.Node(li)
	ctx := harness.Context(t, 20*time.Second)
	const ttl = 30 * time.Second
	acquire := func(key, holder string) cluster.LeaseView {
		t.Helper()
		l, _, err := leader.Acquire(ctx, cluster.AcquireRequest{Secret: testSecret, Key: key, Holder: holder, TTL: ttl})
		if err != nil {
			t.Fatalf("acquire %s: %v", key, err)
		}
		return l
	}
	a, b := acquire("a", "h1"), acquire("b", "h2")
	backup, err := leader.Backup(ctx)
	if err != nil {
		t.Fatalf("backup: %v", err)
	}
	acquire("c", "h3")
	if _, err := leader.Release(ctx, "b", "h2", testSecret, b.Token); err != nil {
		t.Fatalf("release b: %v", err)
	}
	d := acquire("d", "h4")
	if _, err := leader.Release(ctx, "d", "h4", testSecret, d.Token); err != nil {
		t.Fatalf("release d: %v", err)
	}
	highest := d.Token

	res, err := leader.RestoreSnapshot(ctx, backup, cluster.RestoreOptions{})
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	if !res.Replicated {
		t.Errorf("restore not confirmed by a quorum: %+v", res)
	}
	if res.Snapshot.Held != 2 || res.Restored.LastToken != highest || res.Restored.Held != 3 {
		t.Errorf("restore result %+v, want 2 held in the snapshot; 3 held (b back, c kept) and the counter at %d after", res, highest)
	}
	// The leader serves at once, with b back at a full TTL.
	got, err := leader.Get(ctx, "b", cluster.Linearizable)
	if err != nil || !got.Held || got.Holder != "h2" || got.Token != b.Token || got.ExpiresIn < ttl-5*time.Second {
		t.Fatalf("b after the restore: %+v, %v; want held by h2 with token %d and about %v left", got, err, b.Token, ttl)
	}
	e := acquire("e", "h5")
	if e.Token <= highest {
		t.Fatalf("first grant after the restore has token %d, want above %d (handed out since the backup)", e.Token, highest)
	}
	// Every server holds the same state: the followers installed it.
	for i := range c.Len() {
		n := c.Node(i)
		harness.WaitUntil(t, 10*time.Second, "server "+c.Peer(i).ID+" applies the grant after the restore", func() bool {
			v, err := n.Get(ctx, "e", cluster.Stale)
			return err == nil && v.Token == e.Token
		})
		for key, want := range map[string]string{"a": "h1", "b": "h2", "c": "h3"} {
			if v, err := n.Get(ctx, key, cluster.Stale); err != nil || !v.Held || v.Holder != want {
				t.Errorf("server %s, key %s: %+v, %v; want held by %s", c.Peer(i).ID, key, v, err, want)
			}
		}
		if v, err := n.Get(ctx, "d", cluster.Stale); err == nil && v.Held {
			t.Errorf("server %s: d is held after the restore: %+v", c.Peer(i).ID, v)
		}
	}
	if _, err := leader.Renew(ctx, "a", "h1", testSecret, a.Token); err != nil {
		t.Errorf("renew a (held in the backup and since) after the restore: %v", err)
	}
}

// TestRestoreRefusesADamagedSnapshot: a damaged snapshot is refused as
// invalid, naming the field, and nothing changes.
func TestRestoreRefusesADamagedSnapshot(t *testing.T) {
	c := inproc.Start(t, 3, inproc.Options{})
	leader := c.Node(c.Leader())
	ctx := harness.Context(t, 10*time.Second)
	if _, _, err := leader.Acquire(ctx, cluster.AcquireRequest{Secret: testSecret, Key: "a", Holder: "h", TTL: time.Minute}); err != nil {
		t.Fatal(err)
	}
	backup, err := leader.Backup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	backup[len(backup)/2] ^= 0x40
	_, err = leader.RestoreSnapshot(ctx, backup, cluster.RestoreOptions{})
	var inv *cluster.InvalidError
	if !errors.As(err, &inv) || inv.Field != "snapshot" {
		t.Fatalf("restore of a damaged snapshot: %v, want an InvalidError on field snapshot", err)
	}
	if v, err := leader.Get(ctx, "a", cluster.Linearizable); err != nil || !v.Held {
		t.Fatalf("a after the refused restore: %+v, %v; want held", v, err)
	}
}

// TestLeaderDoesNotEstablishDuringARestore: while a restore holds writes
// back and has halted the leader's proposer, the leader does not try to
// establish again (each attempt put a barrier in the log, which made a
// restore that took longer than a heartbeat timeout to prepare give up);
// once the restore lets writes through, it establishes and serves.
func TestLeaderDoesNotEstablishDuringARestore(t *testing.T) {
	c := inproc.Start(t, 3, inproc.Options{})
	leader := c.Node(c.Leader())
	r := cluster.RaftOf(leader)
	release := cluster.HoldWritesAsARestore(leader)
	before := r.LastIndex()
	// Ten heartbeat timeouts: the lead loop retried every one of them.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for end := time.Now().Add(1500 * time.Millisecond); time.Now().Before(end); <-tick.C {
		if got := r.LastIndex(); got != before {
			release()
			t.Fatalf("the log moved from index %d to %d while a restore held writes back", before, got)
		}
	}
	release()
	harness.WaitUntil(t, 5*time.Second, "the leader serves again after the restore", func() bool {
		return cluster.Serving(leader)
	})
}

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
