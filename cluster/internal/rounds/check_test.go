package rounds

import (
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// leaderRaft is a leader's Raft state as CheckLeadership reads it: the
// term it reads the second time is after.
type leaderRaft struct {
	state       raft.RaftState
	term, after uint64
	reads       int
	confErr     error
}

func (r *leaderRaft) CurrentTerm() uint64 {
	r.reads++
	if r.reads > 1 {
		return r.after
	}
	return r.term
}
func (r *leaderRaft) CommitIndex() uint64   { return 42 }
func (r *leaderRaft) State() raft.RaftState { return r.state }
func (r *leaderRaft) GetConfiguration() raft.ConfigurationFuture {
	return confFuture{conf: raft.Configuration{Servers: []raft.Server{{ID: "self", Address: "self:1", Suffrage: raft.Voter}}}, err: r.confErr}
}

type confFuture struct {
	conf raft.Configuration
	err  error
}

func (f confFuture) Error() error                      { return f.err }
func (f confFuture) Index() uint64                     { return 0 }
func (f confFuture) Configuration() raft.Configuration { return f.conf }

// A single voter's round needs no answer: CheckLeadership returns the
// commit index read at its start if this node is leader before and after,
// in the same term, and an error otherwise.
func TestCheckLeadership(t *testing.T) {
	errConf := errors.New("no configuration")
	tests := []struct {
		name       string
		raft       *leaderRaft
		wantCommit uint64
		wantErr    error
	}{
		{name: "leader throughout", raft: &leaderRaft{state: raft.Leader, term: 3, after: 3}, wantCommit: 42},
		{name: "not leader", raft: &leaderRaft{state: raft.Follower, term: 3, after: 3}, wantErr: raft.ErrNotLeader},
		{name: "newer term after the round", raft: &leaderRaft{state: raft.Leader, term: 3, after: 4}, wantErr: raft.ErrLeadershipLost},
		{name: "configuration unreadable", raft: &leaderRaft{state: raft.Leader, term: 3, after: 3, confErr: errConf}, wantErr: errConf},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewConfirmer("self", nil, time.Second, errors.New("closed"), hclog.NewNullLogger())
			t.Cleanup(c.Close)
			commit, err := c.CheckLeadership(tc.raft)
			if !errors.Is(err, tc.wantErr) || commit != tc.wantCommit {
				t.Errorf("got %d, %v; want %d, %v", commit, err, tc.wantCommit, tc.wantErr)
			}
		})
	}
}
