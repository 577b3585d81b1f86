package views

import (
	"testing"
	"time"
)

// The failure tolerance counts the voters this node can tell answer: on
// the leader by their answers to Raft, on a follower by its contact with
// the leader and by gossip for the others; never below 0, 0 with no
// leader; a node with a disk problem does not count itself.
func TestJudgeHealth(t *testing.T) {
	now := time.Unix(1000, 0)
	recent := 200 * time.Millisecond
	three := func(role, leader string) Status {
		return Status{Role: role, LeaderID: leader, Servers: []Server{
			{ID: "n1", RaftAddr: "a1", Voter: true, Leader: leader == "n1"},
			{ID: "n2", RaftAddr: "a2", Voter: true, Leader: leader == "n2"},
			{ID: "n3", RaftAddr: "a3", Voter: true, Leader: leader == "n3"},
			{ID: "n4", RaftAddr: "a4"}, // a non-voter counts for nothing
		}}
	}
	saw := map[string]time.Time{"n2": now.Add(-50 * time.Millisecond), "n3": now.Add(-time.Second), "n4": now}
	j := Judge{Self: "n1", Recent: recent,
		LeaderSaw: func(id, addr string) (time.Time, bool) { at, ok := saw[id]; return at, ok },
		Alive:     func(id string) bool { return id == "n3" }}
	for _, tc := range []struct {
		name    string
		s       Status
		healthy map[string]bool
		want    int
	}{
		{"leader: n3 last answered a second ago", three("leader", "n1"), map[string]bool{"n1": true, "n2": true, "n3": false, "n4": true}, 0},
		{"follower: the leader heard lately, n3 alive on gossip", func() Status {
			s := three("follower", "n2")
			s.LastContact = 50 * time.Millisecond
			return s
		}(), map[string]bool{"n1": true, "n2": true, "n3": true, "n4": false}, 1},
		{"follower: the leader silent too long", func() Status {
			s := three("follower", "n2")
			s.LastContact = time.Second
			return s
		}(), map[string]bool{"n1": true, "n2": false, "n3": true}, 0},
		{"no leader", three("candidate", ""), map[string]bool{"n3": true}, 0},
		{"a disk problem of its own", func() Status {
			s := three("follower", "n2")
			s.Health.Problem = "disk"
			return s
		}(), map[string]bool{"n1": false, "n2": true, "n3": true}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.s
			JudgeHealth(&s, j, now)
			for _, srv := range s.Servers {
				if want, ok := tc.healthy[srv.ID]; ok && srv.Healthy != want {
					t.Errorf("%s healthy = %v, want %v", srv.ID, srv.Healthy, want)
				}
			}
			if s.FailureTolerance != tc.want {
				t.Errorf("failure tolerance %d, want %d (%s)", s.FailureTolerance, tc.want, HealthShape(s))
			}
		})
	}
}
