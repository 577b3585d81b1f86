package cluster

import (
	"context"
	"errors"
	"sync/atomic"

	"github.com/hashicorp/memberlist"
	"github.com/tenure-io/tenure/cluster/internal/check"
	"github.com/tenure-io/tenure/cluster/internal/connlimit"
	"github.com/tenure-io/tenure/cluster/internal/limitedlog"
	"github.com/tenure-io/tenure/cluster/internal/membership"
	"github.com/tenure-io/tenure/cluster/internal/nodeconfig"
	"github.com/tenure-io/tenure/cluster/internal/transport"
)

// MemberMeta is what a member announces over gossip (membership.MemberMeta).
type MemberMeta = membership.MemberMeta

// Member is one gossip member as this node sees it (membership.Member).
type Member = membership.Member

// KeyringMessage is a keyring operation as it travels over gossip
// (membership.KeyringMessage).
type KeyringMessage = membership.KeyringMessage

// KeyringView is one key as the members announce it
// (membership.KeyringView).
type KeyringView = membership.KeyringView

// ErrNotProven: a member that announces itself as a server has not proven
// that it belongs to this cluster. The leader does not admit it to Raft.
var ErrNotProven = membership.ErrNotProven

// ParseGossipKey decodes a base64 gossip key and checks its length.
func ParseGossipKey(s string) ([]byte, error) { return membership.ParseGossipKey(s) }

// rulesOf are the leader's rules for admission, promotion and cleanup
// under cfg.
func rulesOf(cfg Config) membership.Rules {
	return membership.Rules{
		Voters:        cfg.Voters(),
		Stabilization: cfg.ServerStabilization,
		DeadAfter:     cfg.DeadServerCleanup,
		AddressGrace:  nodeconfig.AddressGrace(cfg),
		Recent:        2 * cfg.HeartbeatTimeout,
		CatchUpLag:    cfg.MaxCatchUpLag,
	}
}

// gossipTransport makes memberlist's transport with the node's caps on
// inbound stream connections (trusted tells the cluster's servers), and
// records its gate in *gate; senders learns who sends the plain streams
// that encrypted gossip refuses.
func gossipTransport(limits ConnLimits, trusted func(ip string) bool, gate **connlimit.Gate, senders *transport.Senders) func(string, int, *memberlist.Config) (membership.Transport, error) {
	return func(host string, port int, mc *memberlist.Config) (membership.Transport, error) {
		g := connlimit.New(nodeconfig.GossipLimits(limits, trusted))
		tr, err := transport.NewGossipTransport(host, port, g, mc, senders)
		if err != nil {
			return nil, err
		}
		*gate = g
		return tr, nil
	}
}

// refusedGossipSender names the member behind the from= address of
// memberlist's line about gossip it refused: the sender of a plain stream
// that senders read, else the member of table that gossips from that
// address (a packet's source is its sender's gossip address: a member
// left with a key the cluster no longer holds). table is nil until gossip
// has started.
func refusedGossipSender(senders *transport.Senders, table *atomic.Pointer[membership.Gossip]) func(string) (limitedlog.Member, bool) {
	return func(from string) (limitedlog.Member, bool) {
		if s, ok := senders.Of(from); ok {
			return s, true
		}
		if g := table.Load(); g != nil {
			for _, m := range g.Members() {
				if m.Addr == from {
					return limitedlog.Member{Name: m.Name, Role: m.Meta.Role}, true
				}
			}
		}
		return limitedlog.Member{}, false
	}
}

// Members lists the gossip members (servers and workers); nil without
// gossip.
func (n *Node) Members() []Member {
	if n.gossip == nil {
		return nil
	}
	return n.gossip.Members()
}

// liveWorkers are the members that are workers and alive (suspect ones
// count as alive until gossip decides).
func liveWorkers(members []Member) []Member {
	var out []Member
	for _, m := range members {
		if m.Meta.Role == "worker" && check.Name("worker", m.Meta.ID) == nil && m.Status == "alive" {
			out = append(out, m)
		}
	}
	return out
}

// ChangeKeyring applies op to this server's keyring, saves it and
// announces the new fingerprints. It changes nothing else: the API sends
// the change to the other servers itself, over its own authenticated path
// (TLS and ACLs), and to the workers with SendKeyringToWorkers. Servers
// never take keyring changes from gossip, where any member (a worker
// holding the key) could send one.
func (n *Node) ChangeKeyring(op KeyringMessage) error {
	if n.gossip == nil {
		return ErrGossipPlaintext
	}
	return keyringError(n.gossip.ChangeKeyring(op))
}

// SendKeyringToWorkers sends op over gossip to every worker alive in this
// server's view and returns the names of those it could not reach.
func (n *Node) SendKeyringToWorkers(ctx context.Context, op KeyringMessage) ([]string, error) {
	if n.gossip == nil {
		return nil, ErrGossipPlaintext
	}
	failed, err := n.gossip.SendToWorkers(ctx, op)
	return failed, keyringError(err)
}

// Keyring lists every key that a member alive in this server's view
// announces, with how many members hold it and use it as primary, and the
// number of those members.
func (n *Node) Keyring() ([]KeyringView, int, error) {
	if n.gossip == nil {
		return nil, 0, ErrGossipPlaintext
	}
	views, total, err := n.gossip.KeyringViews()
	return views, total, keyringError(err)
}

// keyringError is err of a keyring change with the node's sentinel
// ErrGossipPlaintext (a refused change is an *InvalidError already).
func keyringError(err error) error {
	if errors.Is(err, membership.ErrPlaintext) {
		return ErrGossipPlaintext
	}
	return err
}
