package cluster

import (
	"testing"
	"time"
)

// Guarantee (fencing): tokens never go back — not after a follower installs
// a snapshot instead of the log, and not after every node stops and starts
// again from its data dir (which restores from the snapshot and replays
// the log). A lease held across the restart keeps its holder and token.
func TestTokensSurviveSnapshotInstallAndFullRestart(t *testing.T) {
	c := newTestCluster(t, 3, false, func(cfg *Config) {
		cfg.SnapshotThreshold = 16
		cfg.TrailingLogs = 4
		cfg.SnapshotInterval = 50 * time.Millisecond
	})
	held := acquire(t, c, "scene-01", "tracker-0", time.Minute)
	last := held.Token

	// Cut a follower off while the others write enough to snapshot and
	// truncate the log it would need.
	lagging := (c.leader() + 1) % 3
	c.isolate(lagging)
	for i := 0; i < 60; i++ {
		l := acquire(t, c, "churn", "h", time.Minute)
		if l.Token <= last {
			t.Fatalf("token %d not above %d", l.Token, last)
		}
		last = l.Token
		if err := c.node(c.leader()).Release(ctxT(t, 5*time.Second), "churn", "h", l.Token); err != nil {
			t.Fatalf("release: %v", err)
		}
	}
	// Every node but the lagging one snapshots (and so truncates its log),
	// so whichever leads after healing must send a snapshot, even when
	// leadership moved during the writes.
	for i := 0; i < 3; i++ {
		if i == lagging {
			continue
		}
		if _, err := c.node(i).Snapshot(ctxT(t, 5*time.Second)); err != nil {
			t.Logf("explicit snapshot of node %d: %v", i, err) // a periodic one may have just run
		}
	}
	c.heal(lagging)
	waitFor(t, 10*time.Second, "the lagging follower to install the snapshot", func() bool {
		return c.node(lagging).machine.LastToken() == last
	})
	if snap := c.node(lagging).raft.Stats()["last_snapshot_index"]; snap == "0" {
		t.Fatalf("the lagging follower caught up without a snapshot; the test did not exercise InstallSnapshot")
	}
	if got := c.node(lagging).machine.Get("churn"); got == nil || got.Token != last || got.Held {
		t.Fatalf("lagging follower's churn key: %+v, want free with token %d", got, last)
	}

	// Stop everything, start everything from the data dirs.
	for i := 0; i < 3; i++ {
		c.stop(i)
	}
	for i := 0; i < 3; i++ {
		c.start(i)
	}
	c.leader()
	for i := 0; i < 3; i++ {
		waitFor(t, 10*time.Second, "node to replay its state", func() bool {
			return c.node(i).machine.LastToken() == last
		})
	}
	got, err := c.node(c.leader()).Get(ctxT(t, 5*time.Second), "scene-01", Linearizable)
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if !got.Held || got.Holder != held.Holder || got.Token != held.Token {
		t.Fatalf("after restart: %+v, want held by %s under %d", got.Lease, held.Holder, held.Token)
	}
	next := acquire(t, c, "churn", "h2", time.Minute)
	if next.Token <= last {
		t.Fatalf("token after full restart %d, want above %d", next.Token, last)
	}
}
