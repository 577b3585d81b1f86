package raftstore

import (
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
)

// DeferTruncation returns s with the truncation of a conflicting suffix
// of the log put off until the entries that replace it are stored, so
// that the store always holds what Raft believes its log is.
//
// hashicorp/raft (v1.7) resolves a conflict on a follower by deleting
// the suffix from the first conflicting entry (DeleteRange) and then
// storing the leader's entries (StoreLogs). When the deletion succeeds
// and the store fails, as on a full disk, Raft keeps its last index at
// the deleted suffix: every later append then fails at reading an entry
// it believes it has, and the leader walks its next index back, with
// growing back-off, until it has to send a snapshot. The follower is
// stuck for as long as that takes, though its disk has room again.
//
// Here a DeleteRange that reaches the end of the log and starts after its
// first entry (a truncation; compaction deletes from the first entry)
// deletes nothing and succeeds. The next StoreLogs overwrites the
// conflicting entries in place and, once it has succeeded, deletes any
// entry above the last one it stored. A failed StoreLogs thus leaves the
// store as it was, which is what Raft believes; a failed deletion after
// it hides the entries above from GetLog and LastIndex until a later
// StoreLogs deletes them. A server that stops with such entries on disk
// starts with them as the end of its log: uncommitted entries of an older
// term, which the leader replaces as it would any conflicting suffix.
func DeferTruncation(s raft.LogStore) raft.LogStore { return &deferredTruncation{LogStore: s} }

type deferredTruncation struct {
	raft.LogStore

	// mu serialises the writes; GetLog, on Raft's replication path,
	// reads hideAbove without it.
	mu sync.Mutex
	// pending: a truncation was put off; the next successful StoreLogs
	// deletes what lies above it.
	pending bool
	// hideAbove, when not 0, is the last index of the log: entries above
	// it are left from a truncation whose deletion failed.
	hideAbove atomic.Uint64
}

func (s *deferredTruncation) DeleteRange(min, max uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	first, err := s.LogStore.FirstIndex()
	if err != nil {
		return err
	}
	last, err := s.LastIndex()
	if err != nil {
		return err
	}
	if min > first && max >= last {
		s.pending = true
		return nil
	}
	if hide := s.hideAbove.Load(); hide == 0 || max < hide {
		return s.LogStore.DeleteRange(min, max)
	}
	// Through the end of the log: the hidden entries go too.
	if max, err = s.LogStore.LastIndex(); err != nil {
		return err
	}
	if err := s.LogStore.DeleteRange(min, max); err != nil {
		return err
	}
	s.hideAbove.Store(0)
	return nil
}

func (s *deferredTruncation) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

func (s *deferredTruncation) StoreLogs(logs []*raft.Log) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.LogStore.StoreLogs(logs); err != nil || len(logs) == 0 || (!s.pending && s.hideAbove.Load() == 0) {
		return err
	}
	s.pending = false
	end := logs[len(logs)-1].Index
	last, err := s.LogStore.LastIndex()
	if err == nil && last > end {
		err = s.LogStore.DeleteRange(end+1, last)
	}
	if err != nil {
		// The entries are stored; what is left above them stays hidden
		// until a later StoreLogs deletes it.
		s.hideAbove.Store(end)
		return nil
	}
	s.hideAbove.Store(0)
	return nil
}

func (s *deferredTruncation) GetLog(index uint64, l *raft.Log) error {
	if hide := s.hideAbove.Load(); hide != 0 && index > hide {
		return raft.ErrLogNotFound
	}
	return s.LogStore.GetLog(index, l)
}

func (s *deferredTruncation) LastIndex() (uint64, error) {
	if hide := s.hideAbove.Load(); hide != 0 {
		return hide, nil
	}
	return s.LogStore.LastIndex()
}
