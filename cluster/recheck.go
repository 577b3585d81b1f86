package cluster

import (
	"time"

	"github.com/hashicorp/raft"
)

// reloader is the part of *raft.Raft that recheckLeader uses.
type reloader interface {
	State() raft.RaftState
	ReloadableConfig() raft.ReloadableConfig
	ReloadConfig(raft.ReloadableConfig) error
}

// recheckLeader makes a follower check at once whether it has heard its
// leader within the heartbeat timeout, as its own heartbeat timer would
// next time it fires. Another server asked it for a pre-vote: that
// server has not heard the leader for a heartbeat timeout.
//
// hashicorp/raft refuses a vote while the follower still knows a leader,
// and a follower forgets the leader only when its timer fires; the timer
// is armed afresh at a random 1-2 heartbeat timeouts each time it fires,
// not at each heartbeat, so a follower notices a dead leader 1-3 timeouts
// after the last heartbeat. Without the check the first follower to notice
// is refused and waits an election timeout, and the failover is the later
// follower's detection; with it, the earlier one's
// (test/bench/results/2026-11-29-profiles.md).
//
// Nothing else changes: the follower stands only if it has not heard the
// leader for a whole heartbeat timeout, the rule its timer applies. Raft
// re-checks when ReloadConfig lowers the heartbeat timeout, so the
// timeout is raised by a nanosecond and put back (the election timeout
// with it, which may not be shorter).
func recheckLeader(r reloader) error {
	if r.State() != raft.Follower {
		return nil
	}
	rc := r.ReloadableConfig()
	up := rc
	up.HeartbeatTimeout += time.Nanosecond
	up.ElectionTimeout += time.Nanosecond
	if err := r.ReloadConfig(up); err != nil {
		return err
	}
	return r.ReloadConfig(rc)
}
