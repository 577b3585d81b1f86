package raftstore

import (
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
