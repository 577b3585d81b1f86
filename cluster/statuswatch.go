package cluster

import (
	"sync"

	"github.com/hashicorp/raft"
)

// broadcast wakes every waiter at once: wait returns a channel that the
// next fire closes. The zero value is ready to use.
type broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

func (b *broadcast) wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

func (b *broadcast) fire() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
}

// StatusChanged returns a channel that is closed the next time something
// Status reports, other than the indexes and times, may have changed: the
// role, the known leader, readiness, the Raft configuration (at its
// commit), or a server's gossip address. Some changes close nothing: a
// term that moves while the same leader stays known or while none is, a
// configuration that arrives in a snapshot, an uncommitted configuration
// entry dropped by a follower; a waiter reads again on its own for those.
// Blocking status reads wait on it.
func (n *Node) StatusChanged() <-chan struct{} { return n.statusChanged.wait() }

// MembersChanged returns a channel that is closed the next time a gossip
// member may have changed. Blocking member reads wait on it.
func (n *Node) MembersChanged() <-chan struct{} { return n.membersSeen.wait() }

// observeRaft registers an observer of Raft's leader, state and peer
// changes, and returns the loop that fires statusChanged on each until
// shutdown; a pre-vote request asked of this node makes a follower check
// its leader at once (recheckLeader). The observer does not block Raft:
// an observation that finds the channel full is dropped, and the ones
// queued fire anyway.
func (n *Node) observeRaft() func() {
	ch := make(chan raft.Observation, 16)
	obs := raft.NewObserver(ch, false, func(o *raft.Observation) bool {
		switch o.Data.(type) {
		case raft.LeaderObservation, raft.RaftState, raft.PeerObservation, raft.RequestPreVoteRequest:
			return true
		}
		return false
	})
	n.raft.RegisterObserver(obs)
	return func() {
		defer n.wg.Done()
		defer n.raft.DeregisterObserver(obs)
		for {
			select {
			case <-n.shutdownCh:
				return
			case o := <-ch:
				switch o.Data.(type) {
				case raft.RequestPreVoteRequest:
					if err := recheckLeader(n.raft); err != nil {
						n.log.Warn("leader re-check after a pre-vote request failed", "error", err)
					}
					continue
				case raft.LeaderObservation:
					n.LeaderHTTPAddr() // asks a new leader for its address at once
				}
				n.statusChanged.fire()
			}
		}
	}
}

// gossipChanged follows a change of the gossip members: a server's
// address may be among them.
func (n *Node) gossipChanged() {
	n.membersSeen.fire()
	n.statusChanged.fire()
}

// configured follows each committed Raft configuration: status waiters
// wake, and the per-peer metrics of servers no longer in it are dropped.
func (n *Node) configured(cfg raft.Configuration) {
	n.statusChanged.fire()
	if n.cfg.PeerMetrics != nil {
		ids := make([]string, 0, len(cfg.Servers))
		for _, srv := range cfg.Servers {
			ids = append(ids, string(srv.ID))
		}
		n.cfg.PeerMetrics.RetainPeers(ids)
	}
}
