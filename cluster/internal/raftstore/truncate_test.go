package raftstore

import (
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// flakyLogStore is an in-memory log store whose next failStores calls
// of StoreLogs, and of DeleteRange, fail as on a full disk.
type flakyLogStore struct {
	*raft.InmemStore
	failStores, failDeletes atomic.Int32
	storeFailures           atomic.Int32
}

func (s *flakyLogStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

func (s *flakyLogStore) StoreLogs(ls []*raft.Log) error {
	if s.failStores.Add(-1) >= 0 {
		s.storeFailures.Add(1)
		return enospc("store logs")
	}
	return s.InmemStore.StoreLogs(ls)
}

func (s *flakyLogStore) DeleteRange(min, max uint64) error {
	if s.failDeletes.Add(-1) >= 0 {
		return enospc("delete range")
	}
	return s.InmemStore.DeleteRange(min, max)
}

func entries(term uint64, from, to uint64) []*raft.Log {
	var ls []*raft.Log
	for i := from; i <= to; i++ {
		ls = append(ls, &raft.Log{Index: i, Term: term, Type: raft.LogCommand, Data: []byte(fmt.Sprintf("%d@%d", i, term))})
	}
	return ls
}

// termsOf lists the term of each entry from..to of s, 0 for a missing one.
func termsOf(t *testing.T, s raft.LogStore, from, to uint64) []uint64 {
	t.Helper()
	var terms []uint64
	for i := from; i <= to; i++ {
		var l raft.Log
		err := s.GetLog(i, &l)
		switch {
		case errors.Is(err, raft.ErrLogNotFound):
			terms = append(terms, 0)
		case err != nil:
			t.Fatalf("GetLog(%d): %v", i, err)
		default:
			terms = append(terms, l.Term)
		}
	}
	return terms
}

// wantLog fails t unless the terms of entries 1..11 of s print as terms
// (0 for a missing entry) and its last index is last.
func wantLog(t *testing.T, s raft.LogStore, when, terms string, last uint64) {
	t.Helper()
	if got := fmt.Sprint(termsOf(t, s, 1, 11)); got != terms {
		t.Fatalf("%s: terms of 1..11: %s, want %s", when, got, terms)
	}
	if got, _ := s.LastIndex(); got != last {
		t.Fatalf("%s: LastIndex %d, want %d", when, got, last)
	}
}

// conflicting returns a store of entries 1..10 of term 1, wrapped by
// DeferTruncation, after Raft's conflict resolution asked it to delete
// 6..10 (to store a new leader's 6..7 next).
func conflicting(t *testing.T) (*flakyLogStore, raft.LogStore) {
	t.Helper()
	base := &flakyLogStore{InmemStore: raft.NewInmemStore()}
	s := DeferTruncation(base)
	if err := s.StoreLogs(entries(1, 1, 10)); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteRange(6, 10); err != nil {
		t.Fatalf("truncation: %v", err)
	}
	return base, s
}

func TestDeferTruncationKeepsTheLogUntilItsReplacementIsStored(t *testing.T) {
	base, s := conflicting(t)
	base.failStores.Store(1)
	if err := s.StoreLogs(entries(2, 6, 7)); err == nil {
		t.Fatal("StoreLogs on a full disk succeeded")
	}
	// Raft still believes its log ends at 10, term 1: so must the store.
	wantLog(t, s, "after the failed append", "[1 1 1 1 1 1 1 1 1 1 0]", 10)
	// The retry finds the conflict again and succeeds.
	if err := s.DeleteRange(6, 10); err != nil {
		t.Fatal(err)
	}
	if err := s.StoreLogs(entries(2, 6, 7)); err != nil {
		t.Fatal(err)
	}
	wantLog(t, s, "after the append", "[1 1 1 1 1 2 2 0 0 0 0]", 7)
	// Compaction deletes a prefix at once.
	if err := s.DeleteRange(1, 3); err != nil {
		t.Fatal(err)
	}
	if first, _ := base.FirstIndex(); first != 4 {
		t.Fatalf("FirstIndex after compacting 1..3: %d, want 4", first)
	}
}

func TestDeferTruncationHidesWhatAFailedDeletionLeft(t *testing.T) {
	base, s := conflicting(t)
	base.failDeletes.Store(1)
	if err := s.StoreLogs(entries(2, 6, 7)); err != nil {
		t.Fatalf("StoreLogs whose clean-up failed: %v, want the append to count", err)
	}
	wantLog(t, s, "after an append whose clean-up failed (8..10 are left over)", "[1 1 1 1 1 2 2 0 0 0 0]", 7)
	if last, _ := base.LastIndex(); last != 10 {
		t.Fatalf("the store's own LastIndex: %d, want 10 (the deletion failed)", last)
	}
	// The next append deletes them.
	if err := s.StoreLogs(entries(2, 8, 8)); err != nil {
		t.Fatal(err)
	}
	if last, _ := base.LastIndex(); last != 8 {
		t.Fatalf("the store's own LastIndex after the next append: %d, want 8", last)
	}
	if got, want := fmt.Sprint(termsOf(t, s, 7, 10)), "[2 2 0 0]"; got != want {
		t.Fatalf("terms of 7..10: %s, want %s", got, want)
	}
}

// countingFSM counts the commands it applies.
type countingFSM struct{ applied atomic.Uint64 }

func (f *countingFSM) Apply(*raft.Log) any                 { f.applied.Add(1); return nil }
func (f *countingFSM) Snapshot() (raft.FSMSnapshot, error) { return nil, errors.New("no snapshots") }
func (f *countingFSM) Restore(io.ReadCloser) error         { return errors.New("no snapshots") }

// Guarantee (a full disk heals): a server whose disk filled while it
// replaced a conflicting suffix of its log (an old leader coming back
// with entries it never replicated) catches up once the disk has room
// again, without waiting for a snapshot. Without DeferTruncation,
// hashicorp/raft v1.7.3 deletes the suffix, fails to store the leader's
// entries, and then fails every append at the entry it deleted.
func TestOldLeaderCatchesUpAfterAFailedAppendThatReplacedItsSuffix(t *testing.T) {
	const n = 3
	type server struct {
		id    raft.ServerID
		trans *raft.InmemTransport
		store *flakyLogStore
		fsm   *countingFSM
		raft  *raft.Raft
	}
	servers := make([]*server, n)
	var conf raft.Configuration
	for i := range servers {
		addr, trans := raft.NewInmemTransport("")
		s := &server{id: raft.ServerID(fmt.Sprintf("s%d", i)), trans: trans, store: &flakyLogStore{InmemStore: raft.NewInmemStore()}, fsm: &countingFSM{}}
		servers[i] = s
		conf.Servers = append(conf.Servers, raft.Server{ID: s.id, Address: addr})
	}
	for _, a := range servers {
		for _, b := range servers {
			if a != b {
				a.trans.Connect(b.trans.LocalAddr(), b.trans)
			}
		}
	}
	for _, s := range servers {
		rc := raft.DefaultConfig()
		rc.LocalID = s.id
		rc.HeartbeatTimeout, rc.ElectionTimeout, rc.LeaderLeaseTimeout = 50*time.Millisecond, 50*time.Millisecond, 50*time.Millisecond
		rc.CommitTimeout = 5 * time.Millisecond
		rc.LogOutput = io.Discard
		stable := raft.NewInmemStore()
		if err := raft.BootstrapCluster(rc, s.store, stable, raft.NewInmemSnapshotStore(), s.trans, conf); err != nil {
			t.Fatal(err)
		}
		r, err := raft.NewRaft(rc, s.fsm, DeferTruncation(s.store), stable, raft.NewInmemSnapshotStore(), s.trans)
		if err != nil {
			t.Fatal(err)
		}
		s.raft = r
		t.Cleanup(func() { _ = r.Shutdown().Error() })
	}
	leader := func(not *server) *server {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			for _, s := range servers {
				if s != not && s.raft.State() == raft.Leader {
					return s
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		t.Fatal("no leader in 10s")
		return nil
	}
	apply := func(s *server, count int) {
		t.Helper()
		for i := 0; i < count; i++ {
			if err := s.raft.Apply([]byte("x"), 5*time.Second).Error(); err != nil {
				t.Fatalf("apply on %s: %v", s.id, err)
			}
		}
	}
	old := leader(nil)
	apply(old, 5)

	// Cut the leader off; it stores 3 entries it can never commit.
	for _, s := range servers {
		if s != old {
			old.trans.Disconnect(s.trans.LocalAddr())
			s.trans.Disconnect(old.trans.LocalAddr())
		}
	}
	before, _ := old.store.LastIndex()
	for i := 0; i < 3; i++ {
		old.raft.Apply([]byte("lost"), 0) // never committed; its future is not awaited
	}
	for last, _ := old.store.LastIndex(); last < before+3; last, _ = old.store.LastIndex() {
		time.Sleep(time.Millisecond)
	}
	next := leader(old)
	apply(next, 10)
	want := next.fsm.applied.Load()

	// Its disk is full for the first append after it comes back: the one
	// that replaces those 3 entries.
	old.store.failStores.Store(1)
	for _, s := range servers {
		if s != old {
			old.trans.Connect(s.trans.LocalAddr(), s.trans)
			s.trans.Connect(old.trans.LocalAddr(), old.trans)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for old.fsm.applied.Load() < want {
		if time.Now().After(deadline) {
			t.Fatalf("the old leader applied %d of %d commands 10s after it came back (%d failed appends): stuck",
				old.fsm.applied.Load(), want, old.store.storeFailures.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if old.store.storeFailures.Load() != 1 {
		t.Fatalf("%d appends failed on the old leader, want the 1 this test causes", old.store.storeFailures.Load())
	}
}
