package cluster

import (
	"testing"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
)

// TestReviewStableStoreMissingKeys: a byte edit of a key's name in
// raft.db (bbolt keeps no checksum of its data pages) makes the key
// absent. A server whose log is of term 2 then starts with no current
// term, or with a vote candidate but no vote term (its vote of term 2
// forgotten): it may vote twice in one term, and the check at start
// lets it through.
func TestReviewStableStoreMissingKeys(t *testing.T) {
	for _, tc := range []struct {
		name  string
		skip  string
		write func(s *raftboltdb.BoltStore)
	}{
		{"CurrentTerm renamed, the log of term 2, last vote in term 1", "", func(s *raftboltdb.BoltStore) {
			s.Set([]byte("CurrentTerX"), seal([]byte("CurrentTerm"), []byte{0, 0, 0, 0, 0, 0, 0, 2}))
			sealedStable{s}.SetUint64([]byte("LastVoteTerm"), 1)
			sealedStable{s}.Set([]byte("LastVoteCand"), []byte("127.0.0.1:7501"))
		}},
		{"LastVoteTerm renamed, the candidate kept", "finding: a vote candidate without a vote term passes checkStableStore (cluster/stablecheck.go)", func(s *raftboltdb.BoltStore) {
			sealedStable{s}.SetUint64([]byte("CurrentTerm"), 2)
			s.Set([]byte("LastVoteTerX"), seal([]byte("LastVoteTerm"), []byte{0, 0, 0, 0, 0, 0, 0, 2}))
			sealedStable{s}.Set([]byte("LastVoteCand"), []byte("127.0.0.1:7501"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip != "" {
				t.Skip(tc.skip)
			}
			store, dir := openTestStore(t, 2)
			tc.write(store)
			if err := checkStableStore(store, store, raft.NewInmemSnapshotStore(), dir, "n1"); err == nil {
				term, _ := (sealedStable{store}).GetUint64([]byte("CurrentTerm"))
				vote, _ := (sealedStable{store}).GetUint64([]byte("LastVoteTerm"))
				t.Errorf("accepted: Raft starts with CurrentTerm %d and LastVoteTerm %d although the log is of term 2", term, vote)
			}
		})
	}
}
