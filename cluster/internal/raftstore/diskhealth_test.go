package raftstore

import (
	"errors"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

func enospc(op string) error { return fmt.Errorf("%s: write raft.db: %w", op, syscall.ENOSPC) }

func TestDiskStableStoreCountsFailures(t *testing.T) {
	h := NewHealth(time.Now)
	s := h.StableStore(failingStable{})
	if err := s.SetUint64([]byte("CurrentTerm"), 2); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("SetUint64: got %v, want ENOSPC", err)
	}
	if err := s.Set([]byte("LastVoteCand"), []byte("n1")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Set: got %v, want ENOSPC", err)
	}
	if got := h.State().Failures; got != 2 {
		t.Fatalf("failures: got %d, want 2", got)
	}
}

type failingStable struct{ raft.StableStore }

func (failingStable) Set([]byte, []byte) error       { return enospc("set") }
func (failingStable) SetUint64([]byte, uint64) error { return enospc("set uint64") }
