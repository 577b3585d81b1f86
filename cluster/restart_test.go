package cluster_test

import (
	"testing"
	"time"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// snapshotInstalledOnLagging starts three servers that snapshot often
// (tweaked further by tweak if not nil) and acquires scene-01 for
// tracker-0. It cuts a follower off while the others write and snapshot
// past the log it would need, heals it, and waits until it caught up by
// installing a snapshot. It returns the cluster, the held lease, the
// follower's index and the last token handed out.
func snapshotInstalledOnLagging(t *testing.T, tweak func(*cluster.Config)) (c *inproc.Cluster, held cluster.LeaseView, lagging int, last uint64) {
	t.Helper()
	c = inproc.Start(t, 3, inproc.Options{Tweak: func(cfg *cluster.Config) {
		cfg.SnapshotThreshold = 16
		cfg.TrailingLogs = 4
		cfg.SnapshotInterval = 50 * time.Millisecond
		if tweak != nil {
			tweak(cfg)
		}
	}})
	held = acquire(t, c, "scene-01", "tracker-0", time.Minute)
	last = held.Token

	// Cut a follower off while the others write enough to snapshot and
	// truncate the log it would need.
	lagging = (c.Leader() + 1) % 3
	c.Isolate(lagging)
	for i := 0; i < 60; i++ {
		l := acquire(t, c, "churn", "h", time.Minute)
		if l.Token <= last {
			t.Fatalf("token %d not above %d", l.Token, last)
		}
		last = l.Token
		if _, err := c.Node(c.Leader()).Release(harness.Context(t, 5*time.Second), "churn", "h", testSecret, l.Token); err != nil {
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
		if _, err := c.Node(i).Snapshot(harness.Context(t, 5*time.Second)); err != nil {
			t.Logf("explicit snapshot of node %d: %v", i, err) // a periodic one may have just run
		}
	}
	c.Heal(lagging)
	harness.WaitUntil(t, 10*time.Second, "the lagging follower to catch up", func() bool {
		return cluster.MachineOf(c.Node(lagging)).LastToken() == last
	})
	// Raft records the installed snapshot only after the state machine
	// restored it: wait for that too, rather than read it at once. A
	// follower that caught up without a snapshot never records one, and
	// then the test did not exercise InstallSnapshot.
	harness.WaitUntil(t, 5*time.Second, "the lagging follower to record the snapshot it installed", func() bool {
		return cluster.RaftOf(c.Node(lagging)).Stats()["last_snapshot_index"] != "0"
	})
	return c, held, lagging, last
}

// Guarantee (fencing): tokens never go back — not after a follower installs
// a snapshot instead of the log, and not after every node stops and starts
// again from its data dir (which restores from the snapshot and replays
// the log). A lease held across the restart keeps its holder and token.
func TestTokensSurviveSnapshotInstallAndFullRestart(t *testing.T) {
	c, held, lagging, last := snapshotInstalledOnLagging(t, nil)
	if got := cluster.MachineOf(c.Node(lagging)).Get("churn"); got == nil || got.Token != last || got.Held {
		t.Fatalf("lagging follower's churn key: %+v, want free with token %d", got, last)
	}

	// Stop everything, start everything from the data dirs.
	for i := 0; i < 3; i++ {
		c.Stop(i)
	}
	for i := 0; i < 3; i++ {
		c.Restart(i)
	}
	c.Leader()
	for i := 0; i < 3; i++ {
		harness.WaitUntil(t, 10*time.Second, "node to replay its state", func() bool {
			return cluster.MachineOf(c.Node(i)).LastToken() == last
		})
	}
	got, err := c.Node(c.Leader()).Get(harness.Context(t, 5*time.Second), "scene-01", cluster.Linearizable)
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
