package raftstore

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

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
			if !errors.Is(err, ErrRefusedStart) || !errors.Is(err, ErrStableCorrupt) {
				t.Errorf("error %v: want ErrRefusedStart and ErrStableCorrupt", err)
			}
			for _, want := range []string{tc.refuse, filepath.Join(dir, DBFile), "remove-server -force n1"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}
}
