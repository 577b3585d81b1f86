package raftstore

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/tenure-io/tenure/cluster/internal/identity"
)

// openTestStore is a raft.db in a temp dir whose last log entry is of
// term logTerm.
func openTestStore(t *testing.T, logTerm uint64) (*raftboltdb.BoltStore, string) {
	t.Helper()
	dir := t.TempDir()
	store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, DBFile)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	if err := store.StoreLog(&raft.Log{Index: 1, Term: logTerm, Type: raft.LogNoop}); err != nil {
		t.Fatal(err)
	}
	return store, dir
}

// The checks at start, by what the stable store holds: values of an older
// build (unsealed) pass and are sealed; a term or vote that contradicts the
// log, or a damaged seal, is refused.
func TestCheckStableStore(t *testing.T) {
	for _, tc := range []struct {
		name    string
		logTerm uint64
		write   func(s *raftboltdb.BoltStore)
		refuse  string // "" when the check passes
	}{
		{"sealed, consistent", 2, func(s *raftboltdb.BoltStore) {
			SealedStable{s}.SetUint64([]byte("CurrentTerm"), 2)
			SealedStable{s}.SetUint64([]byte("LastVoteTerm"), 2)
			SealedStable{s}.Set([]byte("LastVoteCand"), []byte("127.0.0.1:7501"))
		}, ""},
		{"written by an older build", 2, func(s *raftboltdb.BoltStore) {
			s.SetUint64([]byte("CurrentTerm"), 2)
			s.SetUint64([]byte("LastVoteTerm"), 2)
			s.Set([]byte("LastVoteCand"), []byte("127.0.0.1:7501"))
		}, ""},
		{"sealed term before the log's (an old copy)", 5, func(s *raftboltdb.BoltStore) {
			SealedStable{s}.SetUint64([]byte("CurrentTerm"), 3)
		}, "CurrentTerm 3 is before the term 5"},
		{"older build's term before the log's", 5, func(s *raftboltdb.BoltStore) {
			s.SetUint64([]byte("CurrentTerm"), 4)
		}, "CurrentTerm 4 is before the term 5"},
		{"vote after the term", 2, func(s *raftboltdb.BoltStore) {
			SealedStable{s}.SetUint64([]byte("CurrentTerm"), 2)
			SealedStable{s}.SetUint64([]byte("LastVoteTerm"), 3)
		}, "LastVoteTerm 3 is after CurrentTerm 2"},
		{"a damaged vote", 2, func(s *raftboltdb.BoltStore) {
			SealedStable{s}.SetUint64([]byte("CurrentTerm"), 2)
			v := seal([]byte("LastVoteCand"), []byte("127.0.0.1:7501"))
			v[3] ^= 0x01
			s.Set([]byte("LastVoteCand"), v)
		}, "LastVoteCand does not match its checksum"},
		{"a number of the wrong size", 2, func(s *raftboltdb.BoltStore) {
			s.Set([]byte("CurrentTerm"), []byte{0, 0, 2})
		}, "CurrentTerm is 3 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, dir := openTestStore(t, tc.logTerm)
			tc.write(store)
			err := CheckStableStore(store, store, raft.NewInmemSnapshotStore(), dir, "n1")
			if tc.refuse == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				for _, k := range []string{"CurrentTerm", "LastVoteTerm", "LastVoteCand"} {
					stored, err := store.Get([]byte(k))
					if err != nil || !bytes.HasSuffix(stored, []byte(sealMagic)) {
						t.Errorf("%s after the check: %x, %v; want it sealed", k, stored, err)
					}
				}
				if term, err := (SealedStable{store}).GetUint64([]byte("CurrentTerm")); err != nil || term != 2 {
					t.Errorf("CurrentTerm read through the seal: %d, %v; want 2", term, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted; want refused with %q", tc.refuse)
			}
			if !errors.Is(err, identity.ErrRefusedStart) || !errors.Is(err, ErrStableCorrupt) {
				t.Errorf("error %v: want identity.ErrRefusedStart and ErrStableCorrupt", err)
			}
			for _, want := range []string{tc.refuse, filepath.Join(dir, DBFile), "remove-server -force n1"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}

// Raft reads back through the seal what it wrote; a key it never wrote is
// "not found", as Raft expects of the bare store.
func TestSealedStableRoundTrip(t *testing.T) {
	store, _ := openTestStore(t, 1)
	s := SealedStable{store}
	if _, err := s.GetUint64([]byte("CurrentTerm")); err == nil || err.Error() != "not found" {
		t.Errorf("a missing term: %v, want Raft's \"not found\"", err)
	}
	if err := s.SetUint64([]byte("CurrentTerm"), 7); err != nil {
		t.Fatal(err)
	}
	if got, err := s.GetUint64([]byte("CurrentTerm")); err != nil || got != 7 {
		t.Errorf("CurrentTerm = %d, %v; want 7", got, err)
	}
	// An older build reads the number from the first 8 bytes.
	if got, err := store.GetUint64([]byte("CurrentTerm")); err != nil || got != 7 {
		t.Errorf("CurrentTerm through the bare store = %d, %v; want 7", got, err)
	}
	if err := s.Set([]byte("LastVoteCand"), []byte("n2")); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get([]byte("LastVoteCand")); err != nil || string(got) != "n2" {
		t.Errorf("LastVoteCand = %q, %v; want n2", got, err)
	}
	if err := s.SetUint64([]byte("other"), 3); err != nil {
		t.Fatal(err)
	}
	if got, _ := store.Get([]byte("other")); len(got) != 8 {
		t.Errorf("a key Raft does not keep a term or vote in is stored as %x, want the bare 8 bytes", got)
	}
}

// TestStartRefusesAMissingTermOrVote: a byte edit of a key's name in
// raft.db (bbolt keeps no checksum of its data pages) makes the key
// absent. Raft writes CurrentTerm before any log entry, and LastVoteTerm
// before LastVoteCand, so a log with entries but no current term, or a
// vote candidate without a vote term, is such damage: a server that
// starts on it has forgotten its term or its vote of term 2, and may vote
// twice in one term. The check at start refuses it, naming raft.db and
// the remedy.
func TestStartRefusesAMissingTermOrVote(t *testing.T) {
	for _, tc := range []struct {
		name   string
		write  func(s *raftboltdb.BoltStore)
		refuse string
	}{
		{"CurrentTerm renamed, the log of term 2, last vote in term 1", func(s *raftboltdb.BoltStore) {
			s.Set([]byte("CurrentTerX"), seal([]byte("CurrentTerm"), []byte{0, 0, 0, 0, 0, 0, 0, 2}))
			SealedStable{s}.SetUint64([]byte("LastVoteTerm"), 1)
			SealedStable{s}.Set([]byte("LastVoteCand"), []byte("127.0.0.1:7501"))
		}, "no CurrentTerm"},
		{"CurrentTerm renamed, the log of term 2, no vote", func(s *raftboltdb.BoltStore) {
			s.Set([]byte("CurrentTerX"), seal([]byte("CurrentTerm"), []byte{0, 0, 0, 0, 0, 0, 0, 2}))
		}, "no CurrentTerm"},
		{"LastVoteTerm renamed, the candidate kept", func(s *raftboltdb.BoltStore) {
			SealedStable{s}.SetUint64([]byte("CurrentTerm"), 2)
			s.Set([]byte("LastVoteTerX"), seal([]byte("LastVoteTerm"), []byte{0, 0, 0, 0, 0, 0, 0, 2}))
			SealedStable{s}.Set([]byte("LastVoteCand"), []byte("127.0.0.1:7501"))
		}, "LastVoteCand without LastVoteTerm"},
		{"LastVoteTerm renamed, an older build's candidate kept", func(s *raftboltdb.BoltStore) {
			s.SetUint64([]byte("CurrentTerm"), 2)
			s.Set([]byte("LastVoteCand"), []byte("127.0.0.1:7501"))
		}, "LastVoteCand without LastVoteTerm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, dir := openTestStore(t, 2)
			tc.write(store)
			err := CheckStableStore(store, store, raft.NewInmemSnapshotStore(), dir, "n1")
			if err == nil {
				term, _ := (SealedStable{store}).GetUint64([]byte("CurrentTerm"))
				vote, _ := (SealedStable{store}).GetUint64([]byte("LastVoteTerm"))
				t.Fatalf("accepted: Raft starts with CurrentTerm %d and LastVoteTerm %d although the log is of term 2", term, vote)
			}
			if !errors.Is(err, identity.ErrRefusedStart) || !errors.Is(err, ErrStableCorrupt) {
				t.Errorf("error %v: want identity.ErrRefusedStart and ErrStableCorrupt", err)
			}
			for _, want := range []string{tc.refuse, filepath.Join(dir, DBFile), "remove-server -force n1"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
