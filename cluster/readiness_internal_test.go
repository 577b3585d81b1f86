package cluster

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/raftstore"
	"github.com/tenure-io/tenure/cluster/internal/rounds"
)

// stepClock is a time source that tests move by hand.
type stepClock struct{ t time.Time }

func (c *stepClock) now() time.Time          { return c.t }
func (c *stepClock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newStepClock() *stepClock               { return &stepClock{t: time.Unix(1000, 0)} }
func enospc(op string) error                 { return fmt.Errorf("%s: write raft.db: %w", op, syscall.ENOSPC) }

// failingLogStore fails every write while full is set.
type failingLogStore struct {
	*raft.InmemStore
	full bool
}

func (s *failingLogStore) StoreLogs(ls []*raft.Log) error {
	if s.full {
		return enospc("store logs")
	}
	return s.InmemStore.StoreLogs(ls)
}

func TestDiskLogStoreFailedAppendMakesNodeNotReady(t *testing.T) {
	clk := newStepClock()
	h := raftstore.NewHealth(clk.now)
	fs := &failingLogStore{InmemStore: raft.NewInmemStore()}
	ls := h.LogStore(fs)
	hold := 5 * time.Second
	ready := func() NodeHealth { return healthOf(rounds.Lag{}, h.State(), raftstore.State{}, clk.now(), 1000, hold) }

	if err := ls.StoreLogs([]*raft.Log{{Index: 1}}); err != nil {
		t.Fatal(err)
	}
	if got := ready(); got.Problem != "" || got.DiskWriteErrors != 0 {
		t.Fatalf("after a good write: problem %q, %d errors; want ready, 0", got.Problem, got.DiskWriteErrors)
	}
	fs.full = true
	err := ls.StoreLogs([]*raft.Log{{Index: 2}})
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("StoreLogs on a full disk: got %v, want the store's ENOSPC unchanged", err)
	}
	clk.advance(time.Minute) // no write since: still failing, however long ago
	got := ready()
	if !strings.Contains(got.Problem, "write failed") || !strings.Contains(got.Problem, "no space left on device") {
		t.Fatalf("while the last write failed: problem %q, want the failed write and its error", got.Problem)
	}
	if got.DiskWriteErrors != 1 || got.LastDiskError == "" {
		t.Fatalf("errors %d, last %q; want 1 and the error", got.DiskWriteErrors, got.LastDiskError)
	}
	ls.StoreLogs([]*raft.Log{{Index: 2}}) // the leader retries: fails again
	fs.full = false
	clk.advance(time.Second)
	if err := ls.StoreLogs([]*raft.Log{{Index: 2}}); err != nil {
		t.Fatal(err)
	}
	if got := ready(); got.Problem == "" {
		t.Fatalf("a good write 1s after a failure: ready; want not ready for %v after the failure", hold)
	}
	clk.advance(hold)
	if got := ready(); got.Problem != "" {
		t.Fatalf("%v after the last failure, writes succeeding: problem %q, want ready", hold, got.Problem)
	}
}

func TestLagBounds(t *testing.T) {
	cases := []struct {
		name        string
		lag         rounds.Lag
		wantProblem string
	}{
		{name: "caught up", lag: rounds.Lag{LeaderCommit: 50, Applied: 50}},
		{name: "a few entries for a moment", lag: rounds.Lag{LeaderCommit: 60, Applied: 50, Entries: 10, For: 20 * time.Millisecond}},
		{name: "at the entry bound", lag: rounds.Lag{LeaderCommit: 1050, Applied: 50, Entries: 1000, For: time.Second}},
		{name: "past the entry bound", lag: rounds.Lag{LeaderCommit: 1051, Applied: 50, Entries: 1001, For: time.Second},
			wantProblem: "applied index 50 is 1001 entries behind the leader's commit index 1051"},
		{name: "past the time bound", lag: rounds.Lag{LeaderCommit: 51, Applied: 50, Entries: 1, For: 6 * time.Second},
			wantProblem: "applied index 50 has been behind the leader's commit index 51 for 6s"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := healthOf(tc.lag, raftstore.State{}, raftstore.State{}, time.Now(), 1000, 5*time.Second)
			if tc.wantProblem == "" && got.Problem != "" || !strings.Contains(got.Problem, tc.wantProblem) {
				t.Fatalf("problem %q, want %q", got.Problem, tc.wantProblem)
			}
			if got.BehindEntries != tc.lag.Entries || got.BehindFor != tc.lag.For {
				t.Fatalf("behind %d entries for %v, want %d for %v", got.BehindEntries, got.BehindFor, tc.lag.Entries, tc.lag.For)
			}
		})
	}
}

// fakeSnapshotStore creates sinks that fail as told: at Create, at Write
// or at Close.
type fakeSnapshotStore struct {
	raft.SnapshotStore
	failCreate, failWrite, failClose bool
	cancelled                        int
}

func (s *fakeSnapshotStore) Create(raft.SnapshotVersion, uint64, uint64, raft.Configuration, uint64, raft.Transport) (raft.SnapshotSink, error) {
	if s.failCreate {
		return nil, fmt.Errorf("create snapshot: %w", syscall.ENOSPC)
	}
	return &fakeSink{s: s}, nil
}

type fakeSink struct{ s *fakeSnapshotStore }

func (k *fakeSink) ID() string { return "fake" }
func (k *fakeSink) Write(p []byte) (int, error) {
	if k.s.failWrite {
		return 0, fmt.Errorf("write state.bin: %w", syscall.ENOSPC)
	}
	return len(p), nil
}
func (k *fakeSink) Close() error {
	if k.s.failClose {
		return fmt.Errorf("close state.bin: %w", syscall.EIO)
	}
	return nil
}
func (k *fakeSink) Cancel() error { k.s.cancelled++; return nil }

// A failed Create, Write or Close of a snapshot makes the node not ready,
// once per snapshot, however long ago; the next snapshot that closes
// cleanly makes it ready; a snapshot cancelled for another reason (a
// leader's snapshot cut off) changes nothing.
func TestDiskSnapshotStoreFailedSnapshotMakesNodeNotReady(t *testing.T) {
	cases := []struct {
		name                             string
		failCreate, failWrite, failClose bool
		want                             string
	}{
		{"create", true, false, false, "create snapshot: no space left on device"},
		{"write", false, true, false, "write state.bin: no space left on device"},
		{"close", false, false, true, "close state.bin: input/output error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := newStepClock()
			h := raftstore.NewHealth(clk.now)
			fs := &fakeSnapshotStore{}
			st := h.SnapshotStore(fs)
			health := func() NodeHealth {
				return healthOf(rounds.Lag{}, raftstore.State{}, h.State(), clk.now(), 1000, time.Second)
			}
			take := func() error {
				sink, err := st.Create(1, 1, 1, raft.Configuration{}, 1, nil)
				if err != nil {
					return err
				}
				for range 2 {
					if _, err := sink.Write([]byte("state")); err != nil {
						sink.Cancel()
						return err
					}
				}
				return sink.Close()
			}
			if err := take(); err != nil {
				t.Fatal(err)
			}
			if got := health(); got.Problem != "" || got.SnapshotWriteErrors != 0 {
				t.Fatalf("after a good snapshot: problem %q, %d errors; want ready, 0", got.Problem, got.SnapshotWriteErrors)
			}
			fs.failCreate, fs.failWrite, fs.failClose = tc.failCreate, tc.failWrite, tc.failClose
			if err := take(); err == nil || err.Error() != tc.want {
				t.Fatalf("failing snapshot: got %v, want %q unchanged", err, tc.want)
			}
			clk.advance(time.Hour)
			got := health()
			if !strings.Contains(got.Problem, "snapshot write failed 1h0m0s ago") || !strings.Contains(got.Problem, tc.want) {
				t.Fatalf("an hour after the failed snapshot: problem %q, want it named with its error", got.Problem)
			}
			if got.SnapshotWriteErrors != 1 || got.LastSnapshotError != tc.want || !got.SnapshotFailing {
				t.Fatalf("errors %d, last %q, failing %v; want 1 (one per snapshot), %q, true",
					got.SnapshotWriteErrors, got.LastSnapshotError, got.SnapshotFailing, tc.want)
			}
			fs.failCreate, fs.failWrite, fs.failClose = false, false, false
			sink, err := st.Create(1, 2, 1, raft.Configuration{}, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			sink.Cancel() // not a disk failure
			if got := health(); !got.SnapshotFailing || got.SnapshotWriteErrors != 1 {
				t.Fatalf("after a cancelled snapshot: failing %v, %d errors; want still failing, 1", got.SnapshotFailing, got.SnapshotWriteErrors)
			}
			clk.advance(time.Millisecond)
			if err := take(); err != nil {
				t.Fatal(err)
			}
			if got := health(); got.Problem != "" || got.SnapshotFailing {
				t.Fatalf("after a good snapshot: problem %q, failing %v; want ready", got.Problem, got.SnapshotFailing)
			}
		})
	}
}
