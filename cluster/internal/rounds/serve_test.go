package rounds

import (
	"testing"

	"github.com/hashicorp/raft"
)

// fakeRaft is a voter's Raft state, set by the test.
type fakeRaft struct {
	term   uint64
	leader raft.ServerID
}

func (f fakeRaft) LeaderWithID() (raft.ServerAddress, raft.ServerID) {
	return raft.ServerAddress(f.leader), f.leader
}
func (f fakeRaft) CurrentTerm() uint64 { return f.term }

// A voter says yes only in the request's term, to the leader it knows of
// (or when it knows of none), and answers with its own term; before its
// Raft may answer, and once it stops, it says no.
func TestVoterAnswer(t *testing.T) {
	req := Request{Round: 7, Term: 5, Leader: "a"}
	stopped := make(chan struct{})
	close(stopped)
	tests := []struct {
		name     string
		raft     RaftState
		stopped  bool
		wantOK   bool
		wantTerm uint64
	}{
		{name: "same term, same leader", raft: fakeRaft{term: 5, leader: "a"}, wantOK: true, wantTerm: 5},
		{name: "same term, no leader known", raft: fakeRaft{term: 5}, wantOK: true, wantTerm: 5},
		{name: "same term, another leader", raft: fakeRaft{term: 5, leader: "b"}, wantTerm: 5},
		{name: "newer term", raft: fakeRaft{term: 6, leader: "a"}, wantTerm: 6},
		{name: "older term", raft: fakeRaft{term: 4, leader: "a"}, wantTerm: 4},
		{name: "raft not ready", raft: nil},
		{name: "stopped", raft: fakeRaft{term: 5, leader: "a"}, stopped: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := Voter{ID: "v", Raft: func() RaftState { return tc.raft }, Stopped: make(chan struct{})}
			if tc.stopped {
				v.Stopped = stopped
			}
			got := v.Answer(req)
			want := Answer{Round: 7, Term: tc.wantTerm, OK: tc.wantOK, Voter: "v"}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}
