package cluster

import (
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// diskHealth counts the failed writes of this node's Raft log and stable
// stores and remembers the last one. A full or failing disk shows here
// first: hashicorp/raft logs a failed append and answers the leader with a
// failure, but still takes heartbeats, so without this record the node
// would look healthy while it cannot store a single entry.
type diskHealth struct {
	now func() time.Time

	mu        sync.Mutex
	failures  uint64
	lastErr   error
	lastErrAt time.Time
	lastOKAt  time.Time
}

func newDiskHealth(now func() time.Time) *diskHealth {
	return &diskHealth{now: now}
}

// record notes the outcome of one write and returns err unchanged.
func (h *diskHealth) record(err error) error {
	t := h.now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if err != nil {
		h.failures++
		h.lastErr, h.lastErrAt = err, t
	} else {
		h.lastOKAt = t
	}
	return err
}

// diskState is a copy of what diskHealth knows.
type diskState struct {
	// Failures counts every failed write since the node started.
	Failures uint64
	// LastErr is the error of the last failed write, LastErrAt its time;
	// nil and zero when no write failed.
	LastErr   error
	LastErrAt time.Time
	// LastOKAt is the time of the last successful write.
	LastOKAt time.Time
}

func (h *diskHealth) state() diskState {
	h.mu.Lock()
	defer h.mu.Unlock()
	return diskState{Failures: h.failures, LastErr: h.lastErr, LastErrAt: h.lastErrAt, LastOKAt: h.lastOKAt}
}

// failing reports whether the disk counts as failing at now: the last
// write failed (no write succeeded since), or a write failed less than
// hold ago. The hold keeps a disk that fails most writes, and lets a few
// through (a full store reusing freed pages), from flapping to ready.
func (s diskState) failing(now time.Time, hold time.Duration) bool {
	if s.LastErr == nil {
		return false
	}
	return !s.LastOKAt.After(s.LastErrAt) || now.Sub(s.LastErrAt) < hold
}

// diskLogStore is a raft.LogStore whose writes are recorded in a
// diskHealth; reads pass through unchanged.
type diskLogStore struct {
	raft.LogStore
	h *diskHealth
}

func (s diskLogStore) StoreLog(l *raft.Log) error { return s.h.record(s.LogStore.StoreLog(l)) }

func (s diskLogStore) StoreLogs(ls []*raft.Log) error { return s.h.record(s.LogStore.StoreLogs(ls)) }

func (s diskLogStore) DeleteRange(min, max uint64) error {
	return s.h.record(s.LogStore.DeleteRange(min, max))
}

// diskStableStore is a raft.StableStore whose writes are recorded in a
// diskHealth; reads pass through unchanged.
type diskStableStore struct {
	raft.StableStore
	h *diskHealth
}

func (s diskStableStore) Set(k, v []byte) error { return s.h.record(s.StableStore.Set(k, v)) }

func (s diskStableStore) SetUint64(k []byte, v uint64) error {
	return s.h.record(s.StableStore.SetUint64(k, v))
}
