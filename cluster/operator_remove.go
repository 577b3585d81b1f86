package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/membership"
)

// RemoveResult is what a removal did.
type RemoveResult struct {
	ID string
	// Voters is how many voters the configuration has afterwards.
	Voters int
	// Forced lists the rules that force overrode (empty without force, or
	// when no rule was broken).
	Forced []string
	// Readmit says how to bring the server back.
	Readmit string
}

// RemoveServer removes the server id from the Raft configuration, at an
// operator's request. Without force it refuses (ErrUnsafeRemoval, naming
// the rule) to remove
//
//   - a server that is alive and in touch with the leader (this leader
//     included): its removal is a decision to take once it is stopped, so
//     that a typo cannot take a working voter out;
//   - a voter whose removal leaves fewer voters than the configured size
//     of the cluster (ConfiguredVoters): one more failure would then lose
//     quorum.
//
// With force it goes ahead and lists the rules it overrode. The removed
// server keeps its data dir; ReadmitServer brings it back. Leader only.
// ErrLeadershipLost: leadership was lost while the change was committing,
// and whether the server is still in the configuration is unknown.
// ErrNotReady: a leadership transfer refused the change; nothing changed.
func (n *Node) RemoveServer(ctx context.Context, id string, force bool) (RemoveResult, error) {
	if _, err := n.proposer(); err != nil {
		return RemoveResult{}, err
	}
	target, voters, err := n.configServer(id)
	if err != nil {
		return RemoveResult{}, err
	}
	if target == nil {
		return RemoveResult{}, fmt.Errorf("server %q: %w", id, ErrNotFound)
	}
	after := voters
	if target.Suffrage == raft.Voter {
		after--
	}
	var broken []string
	if id == n.cfg.NodeID {
		broken = append(broken, fmt.Sprintf("server %q is alive: it is the leader that answers this request (transfer leadership first, or stop it)", id))
	} else if ct, ok := n.contacts.Get(target.ID, target.Address); ok && time.Since(ct.At) <= rulesOf(n.cfg).Recent {
		broken = append(broken, fmt.Sprintf("server %q is alive: the leader heard from it at %s %v ago (stop it first)",
			id, target.Address, time.Since(ct.At).Round(time.Millisecond)))
	}
	if size := n.ConfiguredVoters(); target.Suffrage == raft.Voter && after < size {
		broken = append(broken, fmt.Sprintf("removing voter %q leaves %d voters, fewer than the %d the cluster was bootstrapped with (-bootstrap-expect): one more failure would lose quorum",
			id, after, size))
	}
	if len(broken) > 0 && !force {
		return RemoveResult{}, fmt.Errorf("%w: %s; remove it with force to go ahead", ErrUnsafeRemoval, strings.Join(broken, "; "))
	}
	if n.gossip != nil {
		n.gossip.NoteRemoved(id)
	}
	if err := n.raft.RemoveServer(raft.ServerID(id), 0, 0).Error(); err != nil {
		return RemoveResult{}, fmt.Errorf("remove server %q: %w", id, commitError(err))
	}
	if len(broken) > 0 {
		n.log.Warn("server removed with force", "server_id", id, "voters", after, "overrode", strings.Join(broken, "; "))
	} else {
		n.log.Info("server removed", "server_id", id, "voters", after)
	}
	return RemoveResult{ID: id, Voters: after, Forced: broken, Readmit: readmitHint(id)}, nil
}

// readmitHint is how an operator brings server id back after a removal.
func readmitHint(id string) string {
	return fmt.Sprintf("to bring %s back, start it again with its data dir (no need to wipe it), then readmit it: "+
		"tenure operator readmit-server %s (POST /v1/operator/servers/%s/readmit); it rejoins as a non-voter and is promoted "+
		"once caught up while the cluster has fewer voters than its configured size (or: tenure operator raft promote %s)", id, id, id, id)
}

// ConfiguredVoters is the size of the cluster as this node knows it: its
// own Config.Voters, or the largest -bootstrap-expect announced over
// gossip by a proven server of the cluster (a server started with -join
// alone learns it so); 0 when no one says.
func (n *Node) ConfiguredVoters() int {
	size := n.cfg.Voters()
	for _, m := range n.Members() {
		if m.Meta.Role == "server" && m.Proof() == nil && m.Meta.BootstrapExpect > size {
			size = m.Meta.BootstrapExpect
		}
	}
	return size
}

// ReadmitServer adds back to Raft, as a non-voter, the server id that an
// operator (or dead-server cleanup) removed and that runs again with its
// data dir: gossip must list it alive and proven, and it must pass the
// admission check again at the time of the call (ErrNotFound, and
// ErrNotProven, when it does not). The leader then promotes
// it like any new server (ServerStabilization, while the cluster has fewer
// voters than its configured size), or an operator does (PromoteServer).
// A server already in the configuration is left as it is (safe to retry).
// It returns the server as the configuration has it. Leader only.
func (n *Node) ReadmitServer(ctx context.Context, id string) (Server, error) {
	if _, err := n.proposer(); err != nil {
		return Server{}, err
	}
	srv, _, err := n.configServer(id)
	if err != nil {
		return Server{}, err
	}
	if srv != nil {
		return Server{ID: id, RaftAddr: string(srv.Address), HTTPAddr: n.httpAddrOf(id), Voter: srv.Suffrage == raft.Voter}, nil
	}
	if n.gossip == nil {
		return Server{}, fmt.Errorf("server %q: gossip is off on the leader, so it cannot see the server: %w", id, ErrNotFound)
	}
	var found *Member
	members := n.gossip.Members()
	if k := membership.AnnouncedTwice(members)[id]; k > 1 {
		return Server{}, fmt.Errorf("server %q: %d alive gossip members announce it, so none of them is trusted; stop the one that is not the server and try again: %w", id, k, ErrNotFound)
	}
	for _, m := range members {
		if m.Meta.Role == "server" && m.Meta.ID == id && m.Status == "alive" && m.Meta.RaftAddr != "" && m.Proof() == nil {
			found = &m
		}
	}
	if found == nil {
		return Server{}, fmt.Errorf("server %q: no alive server of this cluster announces it on gossip; start it (with its data dir) and try again: %w", id, ErrNotFound)
	}
	// The kept verdict may be stale (a relay to a server that has since
	// gone down): prove the member again now.
	if err := n.gossip.ProveAgain(*found); err != nil {
		return Server{}, fmt.Errorf("server %q: its gossip member %s does not prove to be it now (%w); start it (with its data dir) and try again: %w", id, found.Name, err, ErrNotFound)
	}
	addr := found.Meta.RaftAddr
	n.gossip.ForgetRemoved(id)
	if err := n.raft.AddNonvoter(raft.ServerID(id), raft.ServerAddress(addr), 0, 10*time.Second).Error(); err != nil {
		return Server{}, fmt.Errorf("readmit server %q: %w", id, err)
	}
	n.log.Info("server readmitted", "server_id", id, "raft_addr", addr, "voter", false)
	return Server{ID: id, RaftAddr: addr, HTTPAddr: n.httpAddrOf(id)}, nil
}
