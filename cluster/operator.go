package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/views"
)

// IsLeader reports whether Raft says this node leads (established or not).
func (n *Node) IsLeader() bool { return n.raft.State() == raft.Leader }

// ID is this node's id.
func (n *Node) ID() string { return n.cfg.NodeID }

// Server is one member of the Raft configuration (views.Server).
type Server = views.Server

// Status is this node's view of the cluster (views.Status).
type Status = views.Status

// Status reports this node's view without contacting other nodes.
func (n *Node) Status() Status {
	leaderAddr, leaderID := n.raft.LeaderWithID()
	role, term := n.roleAndTerm()
	s := Status{
		NodeID:       n.cfg.NodeID,
		ClusterID:    n.machine.ClusterID(),
		Role:         role,
		Ready:        n.leading.Load() != nil,
		LeaderID:     string(leaderID),
		Term:         term,
		LastLogIndex: n.raft.LastIndex(),
		CommitIndex:  n.raft.CommitIndex(),
		AppliedIndex: n.raft.AppliedIndex(),
		LastToken:    n.machine.LastToken(),
		LastContact:  n.LastContact(),
		Health:       n.Health(),
	}
	if leaderID != "" {
		s.LeaderHTTPAddr = n.httpAddrAt(leaderID, leaderAddr)
	}
	if f := n.raft.GetConfiguration(); f.Error() == nil {
		for _, srv := range f.Configuration().Servers {
			s.Servers = append(s.Servers, Server{
				ID:       string(srv.ID),
				RaftAddr: string(srv.Address),
				HTTPAddr: n.httpAddrAt(srv.ID, srv.Address),
				Voter:    srv.Suffrage == raft.Voter,
				Leader:   srv.Address == leaderAddr,
			})
		}
	}
	n.judgeHealth(&s)
	return s
}

// roleAndTerm reads the role and the term as a pair that held at one
// moment: Raft changes them one after the other (a leader stepping down
// becomes follower, then takes the new term), so a role read between two
// readings of an unchanged term belongs to that term.
func (n *Node) roleAndTerm() (string, uint64) {
	for {
		term := n.raft.CurrentTerm()
		role := strings.ToLower(n.raft.State().String()) // leader, follower, candidate or shutdown
		if n.raft.CurrentTerm() == term {
			return role, term
		}
	}
}

// LastContact is the time since this node last heard from the leader; 0 on
// the leader itself.
func (n *Node) LastContact() time.Duration {
	if n.IsLeader() {
		return 0
	}
	last := n.raft.LastContact()
	if last.IsZero() {
		return -1
	}
	return time.Since(last)
}

// LeaderHTTPAddr is the HTTP address of the current leader as this node knows
// it, or "" when there is no known leader (or its address is unknown). It
// never blocks: see LeaderHTTP.
func (n *Node) LeaderHTTPAddr() string {
	addr, id := n.raft.LeaderWithID()
	if id == "" {
		return ""
	}
	return n.httpAddrAt(id, addr)
}

// LeaderHTTP is the current leader's id and HTTP address, as the leader
// itself gave it over its Raft port (transport/addrchannel.go; with TLS, to a dial
// that checked its certificate names that id), or as -initial-cluster
// configures it. When the leader has not answered yet, it waits for the
// question in flight until ctx ends. Both are "" when no leader is known,
// addr alone when its address is not.
func (n *Node) LeaderHTTP(ctx context.Context) (id, addr string) {
	raftAddr, lid := n.raft.LeaderWithID()
	if lid == "" {
		return "", ""
	}
	if a := n.httpAddrAt(lid, raftAddr); a != "" {
		return string(lid), a
	}
	return string(lid), n.httpAddrs.Wait(ctx, lid, raftAddr)
}

// httpAddrOf is the HTTP address of server id of the Raft configuration
// (httpAddrAt), "" when unknown.
func (n *Node) httpAddrOf(id string) string {
	var raftAddr raft.ServerAddress
	if s, _, err := n.configServer(id); err == nil && s != nil {
		raftAddr = s.Address
	}
	return n.httpAddrAt(raft.ServerID(id), raftAddr)
}

// httpAddrAt is the HTTP address of server id at Raft address raftAddr:
// this node's own; else the one the server gave when asked at raftAddr
// (httpAddrs, asked now in the background if not yet); else the one
// -initial-cluster configures. Never what gossip announces, which anyone
// with the gossip key can claim (only in the negative control of
// tenure_unsafe_identity).
func (n *Node) httpAddrAt(id raft.ServerID, raftAddr raft.ServerAddress) string {
	if string(id) == n.cfg.NodeID {
		return n.cfg.HTTPAddr
	}
	if peerIdentity.gossipForwarding && n.gossip != nil {
		if addr := n.gossip.HTTPAddrOf(string(id)); addr != "" {
			return addr
		}
	} else if raftAddr != "" {
		if addr := n.httpAddrs.Get(id, raftAddr); addr != "" {
			return addr
		}
	}
	for _, p := range n.cfg.InitialCluster {
		if p.ID == string(id) {
			return p.HTTPAddr
		}
	}
	return ""
}

// PromoteServer makes the non-voter id a voter, at an operator's request:
// also beyond the configured size (Config.Voters), and also a server
// started with -non-voter. The leader must be in touch with it at its
// configured address and its log caught up (ErrNotCaughtUp otherwise), so
// that an operator cannot add a voter that does not answer, which would
// raise the quorum without adding a vote. Promoting a voter does nothing.
// It returns the number of voters afterwards. Leader only.
func (n *Node) PromoteServer(ctx context.Context, id string) (int, error) {
	if _, err := n.proposer(); err != nil {
		return 0, err
	}
	target, voters, err := n.configServer(id)
	if err != nil {
		return 0, err
	}
	switch {
	case target == nil:
		return 0, fmt.Errorf("server %q: %w", id, ErrNotFound)
	case target.Suffrage == raft.Voter:
		return voters, nil
	}
	ct, ok := n.contacts.Get(target.ID, target.Address)
	if rules := rulesOf(n.cfg); !rules.CaughtUp(ct, ok, time.Now(), n.raft.CommitIndex()) {
		if !ok {
			return 0, fmt.Errorf("server %q has not answered the leader at %s: %w", id, target.Address, ErrNotCaughtUp)
		}
		return 0, fmt.Errorf("server %q last answered %v ago with log index %d, commit index %d: %w",
			id, time.Since(ct.At).Round(time.Millisecond), ct.LastLog, n.raft.CommitIndex(), ErrNotCaughtUp)
	}
	if err := n.raft.AddVoter(target.ID, target.Address, 0, 0).Error(); err != nil {
		return 0, fmt.Errorf("promote server %q: %w", id, commitError(err))
	}
	n.log.Info("server promoted", "server_id", id, "raft_addr", target.Address, "voters", voters+1, "configured_voters", n.cfg.Voters(), "by", "operator")
	return voters + 1, nil
}

// TransferLeadership hands leadership to the server id, or to the most
// up-to-date follower when id is empty, and returns the new leader's id
// once this node has heard from it (or ctx ends). ErrTimeout, or a context
// error: Raft or ctx gave up before the transfer was seen to complete, and
// the outcome is unknown (the target may still take over).
func (n *Node) TransferLeadership(ctx context.Context, id string) (string, error) {
	if !n.IsLeader() {
		return "", ErrNotLeader
	}
	if id == n.cfg.NodeID {
		return "", invalid("id", "%q already leads", id)
	}
	var f raft.Future
	if id == "" {
		others, err := n.otherVoters()
		if err != nil {
			return "", err
		}
		if others == 0 {
			return "", invalid("id", "no other voter can take over: this server is the only voter")
		}
		f = n.raft.LeadershipTransfer()
	} else {
		addr := ""
		for _, srv := range n.Status().Servers {
			if srv.ID == id {
				addr = srv.RaftAddr
			}
		}
		if addr == "" {
			return "", fmt.Errorf("server %q: %w", id, ErrNotFound)
		}
		f = n.raft.LeadershipTransferToServer(raft.ServerID(id), raft.ServerAddress(addr))
	}
	if err := f.Error(); err != nil {
		return "", transferError(err)
	}
	// The transfer completes when this node steps down; the new leader is
	// known here once its first heartbeat arrives.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, leader := n.raft.LeaderWithID(); leader != "" && string(leader) != n.cfg.NodeID {
			return string(leader), nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("transfer leadership: started, new leader not yet known (the outcome is unknown): %w", ctx.Err())
		case <-tick.C:
		}
	}
}

// transferError is the error of Raft's leadership transfer future as the
// cluster's sentinels say it. Raft refuses a transfer before starting it
// when it is not the leader, is shutting down, or is already transferring;
// nothing happened then. Any other error means it started and gave up: its
// own limit (an election timeout) passed before the target caught up or
// took over, or the target did not answer the message that tells it to
// stand. The target may still stand and win, so the outcome is unknown:
// ErrTimeout.
func transferError(err error) error {
	switch {
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrShutdown
	case errors.Is(err, raft.ErrNotLeader):
		return fmt.Errorf("transfer leadership: %w", ErrNotLeader)
	case errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("transfer leadership: %w: %w", ErrNotReady, err)
	}
	return fmt.Errorf("transfer leadership: %w (read /v1/status to see who leads): %w", ErrTimeout, err)
}

// SnapshotInfo describes a snapshot taken on demand.
type SnapshotInfo struct {
	ID    string
	Index uint64
	Term  uint64
	Size  int64
}

// Snapshot takes a Raft snapshot of this node now.
func (n *Node) Snapshot(ctx context.Context) (SnapshotInfo, error) {
	f := n.raft.Snapshot()
	if err := f.Error(); err != nil {
		return SnapshotInfo{}, fmt.Errorf("snapshot: %w", err)
	}
	meta, rc, err := f.Open()
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("open snapshot: %w", err)
	}
	rc.Close()
	return SnapshotInfo{ID: meta.ID, Index: meta.Index, Term: meta.Term, Size: meta.Size}, nil
}

func resolveTCP(addr string) (*net.TCPAddr, error) {
	a, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, err
	}
	if a.IP == nil || a.IP.IsUnspecified() {
		return nil, fmt.Errorf("%q: advertise a routable address, not an unspecified one", addr)
	}
	return a, nil
}

// configServer reads the Raft configuration: the server named id (nil
// when it has none) and the number of voters.
func (n *Node) configServer(id string) (*raft.Server, int, error) {
	f := n.raft.GetConfiguration()
	if err := f.Error(); err != nil {
		return nil, 0, fmt.Errorf("read configuration: %w", err)
	}
	var target *raft.Server
	voters := 0
	for _, srv := range f.Configuration().Servers {
		if srv.Suffrage == raft.Voter {
			voters++
		}
		if string(srv.ID) == id {
			target = &srv
		}
	}
	return target, voters, nil
}

// otherVoters is the number of voters other than this server: those that
// could take its leadership over.
func (n *Node) otherVoters() (int, error) {
	self, voters, err := n.configServer(n.cfg.NodeID)
	if err != nil {
		return 0, err
	}
	if self != nil && self.Suffrage == raft.Voter {
		voters--
	}
	return voters, nil
}
