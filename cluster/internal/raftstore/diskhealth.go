package raftstore

import (
	"io"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Health counts the failed writes of the Raft stores it wraps (a node
// keeps one for its log and stable stores, one for its snapshots) and
// remembers the last one. A full or failing disk shows here
// first: hashicorp/raft logs a failed append and answers the leader with a
// failure, but still takes heartbeats, so without this record the node
// would look healthy while it cannot store a single entry.
type Health struct {
	now func() time.Time

	mu    sync.Mutex
	state State
}

// NewHealth returns a Health that reads the time from now.
func NewHealth(now func() time.Time) *Health {
	return &Health{now: now}
}

// record notes the outcome of one write and returns err unchanged.
func (h *Health) record(err error) error {
	t := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.state.Failures++
		h.state.LastErr, h.state.LastErrAt = err, t
	} else {
		h.state.LastOKAt = t
	}
	return err
}

// State is a copy of what Health knows.
type State struct {
	// Failures counts every failed write since the node started.
	Failures uint64
	// LastErr is the error of the last failed write, LastErrAt its time;
	// nil and zero when no write failed.
	LastErr   error
	LastErrAt time.Time
	// LastOKAt is the time of the last successful write.
	LastOKAt time.Time
}

// State returns what h knows now.
func (h *Health) State() State {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state
}

// Failing reports whether the disk counts as failing at now: the last
// write failed (no write succeeded since), or a write failed less than
// hold ago. The hold keeps a disk that fails most writes, and lets a few
// through (a full store reusing freed pages), from flapping to ready.
func (s State) Failing(now time.Time, hold time.Duration) bool {
	if s.LastErr == nil {
		return false
	}
	return !s.LastOKAt.After(s.LastErrAt) || now.Sub(s.LastErrAt) < hold
}

// LogStore returns s with its writes recorded in h; reads pass through
// unchanged, as does every error.
func (h *Health) LogStore(s raft.LogStore) raft.LogStore { return diskLogStore{s, h} }

// StableStore returns s with its writes recorded in h; reads pass through
// unchanged, as does every error.
func (h *Health) StableStore(s raft.StableStore) raft.StableStore { return diskStableStore{s, h} }

// SnapshotStore returns s with its snapshot writes recorded in h
// (diskSnapshotStore).
func (h *Health) SnapshotStore(s raft.SnapshotStore) raft.SnapshotStore {
	return diskSnapshotStore{s, h}
}

// diskLogStore is a raft.LogStore whose writes are recorded in a
// Health; reads pass through unchanged.
type diskLogStore struct {
	raft.LogStore
	h *Health
}

func (s diskLogStore) StoreLog(l *raft.Log) error { return s.h.record(s.LogStore.StoreLog(l)) }

func (s diskLogStore) StoreLogs(ls []*raft.Log) error { return s.h.record(s.LogStore.StoreLogs(ls)) }

func (s diskLogStore) DeleteRange(min, max uint64) error {
	return s.h.record(s.LogStore.DeleteRange(min, max))
}

// diskStableStore is a raft.StableStore whose writes are recorded in a
// Health; reads pass through unchanged.
type diskStableStore struct {
	raft.StableStore
	h *Health
}

func (s diskStableStore) Set(k, v []byte) error { return s.h.record(s.StableStore.Set(k, v)) }

func (s diskStableStore) SetUint64(k []byte, v uint64) error {
	return s.h.record(s.StableStore.SetUint64(k, v))
}

// diskSnapshotStore is a raft.SnapshotStore whose snapshot writes are
// recorded in a Health: a Create, a Write or a Close that fails is a
// failed snapshot, a Close that succeeds a good one. Raft only logs a
// snapshot that failed (and retries at its next -snapshot-interval), so
// without this record a server whose disk is too full for snapshots, but
// whose log appends still find room in raft.db's free pages, would look
// healthy while its log grows without bound. Reads (List, Open) pass
// through unchanged, as does every error.
//
// Raft calls Create from its snapshot goroutine (snapshots of the state
// machine, user snapshots) and from its main goroutine (installing a
// leader's snapshot, restoring a backup); each sink is used by one
// goroutine.
type diskSnapshotStore struct {
	raft.SnapshotStore
	h *Health
}

func (s diskSnapshotStore) Create(version raft.SnapshotVersion, index, term uint64,
	configuration raft.Configuration, configurationIndex uint64, trans raft.Transport) (raft.SnapshotSink, error) {
	sink, err := s.SnapshotStore.Create(version, index, term, configuration, configurationIndex, trans)
	if err != nil {
		return nil, s.h.record(err)
	}
	return &diskSnapshotSink{SnapshotSink: sink, h: s.h}, nil
}

// diskSnapshotSink records the outcome of one snapshot: at most one
// failure (its first failed Write, or its Close), or a success when it
// closes without error after no failed Write. A sink cancelled without a
// failed Write (a leader's snapshot cut off on the network, a state
// machine that gave up) records nothing: the disk did not fail.
type diskSnapshotSink struct {
	raft.SnapshotSink
	h      *Health
	failed bool
}

func (s *diskSnapshotSink) Write(p []byte) (int, error) {
	n, err := s.SnapshotSink.Write(p)
	if err != nil && !s.failed {
		s.failed = true
		s.h.record(err)
	}
	return n, err
}

func (s *diskSnapshotSink) Close() error {
	err := s.SnapshotSink.Close()
	switch {
	case err != nil && !s.failed:
		s.failed = true
		s.h.record(err)
	case err == nil && !s.failed:
		s.h.record(nil)
	}
	return err
}

var _ io.WriteCloser = (*diskSnapshotSink)(nil)
