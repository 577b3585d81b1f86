package cluster_test

import (
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/cluster/internal/check"
	"github.com/tenure-io/tenure/fsm"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// largeBackupState is a state machine of the size issue reports gave:
// 10,302 held leases, 2,300 of them with the largest metadata a lease may
// carry (MaxMetadataEntries entries of MaxMetadataKey and
// MaxMetadataValue bytes): a backup of about 39 MB.
func largeBackupState(t testing.TB) *fsm.Machine {
	t.Helper()
	const leases, full = 10302, 2300
	meta := make(map[string]string, check.MaxMetadataEntries)
	for i := range check.MaxMetadataEntries {
		k := fmt.Sprintf("k%02d", i) + strings.Repeat("k", check.MaxMetadataKey-3)
		meta[k] = strings.Repeat(string(rune('a'+i)), check.MaxMetadataValue)
	}
	m := fsm.New()
	index := uint64(0)
	for from := 0; from < leases; from += 100 {
		cmds := make([]fsm.Command, 0, 100)
		for i := from; i < min(from+100, leases); i++ {
			a := fsm.Acquire{Key: fmt.Sprintf("big/%05d", i), Holder: fmt.Sprintf("worker-%d", i%50), TTL: time.Minute, Time: int64(i)}
			if i < full {
				a.Metadata = meta
			}
			cmds = append(cmds, a)
		}
		index++
		m.Apply(&raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: fsm.Encode(fsm.Batch{Commands: cmds})})
	}
	if held, _ := m.Counts(); held != leases {
		t.Fatalf("%d leases held, want %d", held, leases)
	}
	return m
}

// TestRestoreOfALargeBackupWithDefaultTimings: a 39 MB backup restores
// into a three-server cluster over TCP with the default Raft timings,
// without an election.
func TestRestoreOfALargeBackupWithDefaultTimings(t *testing.T) {
	if testing.Short() || raceDetector {
		t.Skip("restores 39 MB, and measures time: not with -short or -race")
	}
	// Three servers in one process share one garbage collector, which
	// servers in processes of their own do not: collecting for three
	// 39 MB states at once stalls every server's heartbeats together.
	// Collect less often, as three processes would.
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	built := largeBackupState(t).Backup()
	def := cluster.DefaultConfig()
	c := inproc.Start(t, 3, inproc.Options{TCP: true, Tweak: func(cfg *cluster.Config) {
		cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.LeaderLeaseTimeout = def.HeartbeatTimeout, def.ElectionTimeout, def.LeaderLeaseTimeout
		cfg.CommitTimeout = def.CommitTimeout
	}})
	li := c.Leader()
	leader := c.Node(li)
	ctx := harness.Context(t, 2*time.Minute)
	// Built outside the cluster, the state comes in unverified; what
	// matters is the restore of the backup the cluster then writes. A
	// restore frees every held lease of a key the cluster has no record
	// of, so into this new cluster the first restore brings the keys back
	// free; the second finds their records (free under the same tokens)
	// and brings the leases back held.
	for range 2 {
		if _, err := leader.RestoreSnapshot(ctx, built, cluster.RestoreOptions{Unverified: true}); err != nil {
			t.Fatalf("restore of the state built for the test (%d bytes): %v", len(built), err)
		}
	}
	// Measure on a settled cluster: every server has installed that state.
	harness.WaitUntil(t, time.Minute, "every server holds the state built for the test", func() bool {
		for i := range c.Len() {
			if held, _ := cluster.MachineOf(c.Node(i)).Counts(); held != 10302 {
				return false
			}
		}
		return true
	})
	leader = c.Node(c.AgreedLeader())
	backup, err := leader.Backup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	term := leader.Status().Term
	start := time.Now()
	res, err := leader.RestoreSnapshot(ctx, backup, cluster.RestoreOptions{})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("restore of %d bytes after %v: %v", len(backup), took, err)
	}
	t.Logf("restored %d bytes in %v: %+v", len(backup), took, res.Restored)
	if !res.Verified || !res.Replicated || res.Restored.Held != 10302 {
		t.Errorf("restore result %+v, want verified, replicated, with 10302 held", res)
	}
	if got := c.Node(c.Leader()).Status().Term; got != term {
		t.Errorf("term %d after the restore, want %d: the restore cost an election", got, term)
	}
}
