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
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
)

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
