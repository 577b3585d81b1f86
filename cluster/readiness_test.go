package cluster_test

import (
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// fullDisk is a Raft log store whose appends fail with ENOSPC while full
// is set, as raft.db's do on a full disk.
type fullDisk struct {
	raft.LogStore
	full *atomic.Bool
}

func (d fullDisk) StoreLogs(ls []*raft.Log) error {
	if d.full.Load() {
		return fmt.Errorf("write raft.db: %w", syscall.ENOSPC)
	}
	return d.LogStore.StoreLogs(ls)
}

func (d fullDisk) StoreLog(l *raft.Log) error { return d.StoreLogs([]*raft.Log{l}) }

// Guarantee (readiness tells the truth): a follower whose log appends fail
// (a full disk) reports a problem with the failed write, although it still
// hears the leader's heartbeats, and knows how far behind the leader it
// is; once appends succeed again it catches up and is ready again.
func TestFollowerWithFullDiskIsNotReady(t *testing.T) {
	const hold = 500 * time.Millisecond
	f := startFullFollower(t, func(cfg *cluster.Config, full *atomic.Bool) {
		cfg.ReadyMaxLagTime = hold
		cluster.WrapLogStore(cfg, func(s raft.LogStore) raft.LogStore { return fullDisk{s, full} })
	})
	follower := f.follower

	f.full.Store(true)
	for i := 0; i < 5; i++ {
		f.acquire(t, fmt.Sprintf("while-full-%d", i)) // the other two make a quorum
	}
	harness.WaitFor(t, 5*time.Second, func() error {
		h := follower.Health()
		if !strings.Contains(h.Problem, "write failed") || !strings.Contains(h.Problem, "no space left on device") {
			return fmt.Errorf("problem %q, want the failed write with its error", h.Problem)
		}
		if h.DiskWriteErrors == 0 || h.BehindEntries == 0 {
			return fmt.Errorf("%d disk write errors, %d entries behind; want both above 0", h.DiskWriteErrors, h.BehindEntries)
		}
		return nil
	})
	reg := f.reg
	for _, name := range []string{"tenure_disk_write_errors_total", "tenure_replication_lag_entries", "tenure_replication_lag_seconds"} {
		if v := gauge(t, reg, name); v <= 0 {
			t.Errorf("metric %s: %v on the full follower, want above 0", name, v)
		}
	}
	if v := gauge(t, reg, "tenure_node_healthy"); v != 0 {
		t.Errorf("metric tenure_node_healthy: %v on the full follower, want 0", v)
	}
	// Still not ready long after the failure, while appends keep failing.
	harness.Holds(t, 2*hold, func() error {
		if h := follower.Health(); h.Problem == "" {
			return fmt.Errorf("disk still full: ready, want not ready")
		}
		return nil
	})

	f.full.Store(false)
	harness.WaitFor(t, 10*time.Second, func() error {
		h := follower.Health()
		if h.Problem != "" || h.BehindEntries != 0 {
			return fmt.Errorf("after space was freed: problem %q, %d entries behind; want ready and caught up", h.Problem, h.BehindEntries)
		}
		return nil
	})
}

// fullFollower is a three-server cluster, each server with a registry of
// its own, of which one follower's storage a test fills with full.
type fullFollower struct {
	c        *inproc.Cluster
	li       int // the leader's index in c
	follower *cluster.Node
	full     *atomic.Bool         // the follower's switch
	reg      *prometheus.Registry // the follower's metrics
}

// startFullFollower starts the cluster, wrap giving each server's config
// the storage that fails while the server's switch is set. It returns once
// a first key is acquired and the follower has caught up and is ready.
func startFullFollower(t *testing.T, wrap func(cfg *cluster.Config, full *atomic.Bool)) *fullFollower {
	t.Helper()
	full := map[string]*atomic.Bool{}
	regs := map[string]*prometheus.Registry{}
	c := inproc.Start(t, 3, inproc.Options{Tweak: func(cfg *cluster.Config) {
		f := &atomic.Bool{}
		full[cfg.NodeID] = f
		regs[cfg.NodeID] = prometheus.NewRegistry()
		cfg.Registerer = regs[cfg.NodeID]
		wrap(cfg, f)
	}})
	li := c.Leader()
	fi := (li + 1) % c.Len()
	f := &fullFollower{c: c, li: li, follower: c.Node(fi), full: full[c.Peer(fi).ID], reg: regs[c.Peer(fi).ID]}
	f.acquire(t, "before")
	harness.WaitUntil(t, 5*time.Second, "follower caught up and ready", func() bool {
		h := f.follower.Health()
		return h.Problem == "" && h.AppliedIndex >= c.Node(li).Status().CommitIndex
	})
	return f
}

// acquire acquires key on the leader.
func (f *fullFollower) acquire(t *testing.T, key string) {
	t.Helper()
	err := leaderAcquires(t, f.c, 5*time.Second, 2*time.Second, key, time.Minute)
	if err != nil {
		t.Fatalf("acquire %s: %v", key, err)
	}
}

// gauge is the value of the unlabelled metric name in reg.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name || len(mf.GetMetric()) != 1 {
			continue
		}
		m := mf.GetMetric()[0]
		if m.GetCounter() != nil {
			return m.GetCounter().GetValue()
		}
		return m.GetGauge().GetValue()
	}
	t.Fatalf("metric %s not found", name)
	return 0
}

// fullSnapshots is a Raft snapshot store whose snapshots cannot be
// written while full is set, as on a full disk: the store creates the
// snapshot, then every write into it fails with ENOSPC.
type fullSnapshots struct {
	raft.SnapshotStore
	full *atomic.Bool
}

func (s fullSnapshots) Create(v raft.SnapshotVersion, index, term uint64, c raft.Configuration, ci uint64, t raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.SnapshotStore.Create(v, index, term, c, ci, t)
	if err != nil {
		return nil, err
	}
	return fullSink{sink, s.full}, nil
}

type fullSink struct {
	raft.SnapshotSink
	full *atomic.Bool
}

func (s fullSink) Write(p []byte) (int, error) {
	if s.full.Load() {
		return 0, fmt.Errorf("write state.bin: %w", syscall.ENOSPC)
	}
	return s.SnapshotSink.Write(p)
}

var _ io.Writer = fullSink{}

// Guarantee (readiness tells the truth): a server whose snapshots cannot
// be written (a full disk whose log appends still find room in raft.db's
// free pages) reports not ready, naming the failed snapshot and its error,
// in Health, /readyz and the metrics; it is ready again once a snapshot
// succeeds.
func TestServerThatCannotWriteSnapshotsIsNotReady(t *testing.T) {
	f := startFullFollower(t, func(cfg *cluster.Config, full *atomic.Bool) {
		cluster.WrapSnapshotStore(cfg, func(s raft.SnapshotStore) raft.SnapshotStore { return fullSnapshots{s, full} })
	})
	follower := f.follower

	f.full.Store(true)
	f.acquire(t, "while-full")
	harness.WaitUntil(t, 5*time.Second, "follower applied the acquisition", func() bool {
		return follower.Health().AppliedIndex >= f.c.Node(f.li).Status().CommitIndex
	})
	if _, err := follower.Snapshot(harness.Context(t, 5*time.Second)); err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("snapshot on the full follower: %v, want no space left on device", err)
	}
	h := follower.Health()
	if !strings.Contains(h.Problem, "snapshot") || !strings.Contains(h.Problem, "no space left on device") {
		t.Fatalf("after a failed snapshot: problem %q, want the failed snapshot with its error", h.Problem)
	}
	if h.SnapshotWriteErrors != 1 || !h.SnapshotFailing || !strings.Contains(h.LastSnapshotError, "no space left on device") {
		t.Errorf("after a failed snapshot: %d snapshot errors, failing %v, last %q; want 1, true and the error",
			h.SnapshotWriteErrors, h.SnapshotFailing, h.LastSnapshotError)
	}
	if h.DiskWriteErrors != 0 {
		t.Errorf("after a failed snapshot: %d log store write errors, want 0 (the log takes writes)", h.DiskWriteErrors)
	}
	reg := f.reg
	if v := gauge(t, reg, "tenure_snapshot_write_errors_total"); v != 1 {
		t.Errorf("metric tenure_snapshot_write_errors_total: %v, want 1", v)
	}
	if v := gauge(t, reg, "tenure_node_healthy"); v != 0 {
		t.Errorf("metric tenure_node_healthy: %v on the follower that cannot snapshot, want 0", v)
	}
	// Log appends still succeed: the failed snapshot alone keeps it not
	// ready, however long ago it failed.
	f.acquire(t, "still-full")
	harness.Holds(t, 300*time.Millisecond, func() error {
		if h := follower.Health(); h.Problem == "" {
			return fmt.Errorf("snapshot failed, none succeeded since: ready, want not ready")
		}
		return nil
	})

	f.full.Store(false)
	if _, err := follower.Snapshot(harness.Context(t, 5*time.Second)); err != nil {
		t.Fatalf("snapshot after space was freed: %v", err)
	}
	if h := follower.Health(); h.Problem != "" || h.SnapshotFailing || h.SnapshotWriteErrors != 1 {
		t.Errorf("after a snapshot succeeded: problem %q, failing %v, %d snapshot errors; want ready, false, still 1 counted",
			h.Problem, h.SnapshotFailing, h.SnapshotWriteErrors)
	}
	if v := gauge(t, reg, "tenure_node_healthy"); v != 1 {
		t.Errorf("metric tenure_node_healthy: %v after a snapshot succeeded, want 1", v)
	}
}
