package raftstore

import (
	"io"

	"github.com/hashicorp/raft"
)

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
