package nodeconfig

import (
	"errors"
	"fmt"
	"time"

	"github.com/tenure-io/tenure/cluster/internal/connlimit"
)

// ConnLimits bound what remote hosts can hold open on a server's Raft and
// gossip ports, each port on its own, so that a flood on one (or on the
// HTTP API, which has its own limits) cannot take the file descriptors and
// the accept slots another needs.
//
// A connection past a cap is closed as soon as it is accepted, before it
// is read: it holds a file descriptor for a moment only. Connections from
// the addresses of the servers of the Raft configuration (Trusted) do not
// count against the total, only against the cap per address, so that a
// flood from elsewhere cannot keep the servers from reaching each other.
type ConnLimits struct {
	// RaftMaxConns bounds the open inbound Raft connections;
	// RaftMaxConnsPerClient those of one remote IP address.
	RaftMaxConns, RaftMaxConnsPerClient int
	// GossipMaxConns bounds the open inbound gossip stream (TCP)
	// connections; GossipMaxConnsPerClient those of one remote IP address.
	// Gossip closes each stream after its own timeout (10s).
	GossipMaxConns, GossipMaxConnsPerClient int
	// HandshakeTimeout bounds the time from accepting a Raft connection
	// to its first bytes of Raft (with TLS: to the end of the handshake).
	// A connection that sends nothing in time is closed.
	HandshakeTimeout time.Duration
}

// DefaultConnLimits suit a cluster of up to a few dozen servers: Raft keeps
// a handful of connections per peer (a pool of three, the pipeline, a
// snapshot), gossip a stream per push-pull.
func DefaultConnLimits() ConnLimits {
	return ConnLimits{
		RaftMaxConns:            512,
		RaftMaxConnsPerClient:   64,
		GossipMaxConns:          256,
		GossipMaxConnsPerClient: 32,
		HandshakeTimeout:        10 * time.Second,
	}
}

// FileDescriptors is how many file descriptors the Raft and gossip ports
// may hold at most: their caps, plus, since trusted servers are counted
// per address only, room for five servers at the cap per address.
func (l ConnLimits) FileDescriptors() int {
	return l.RaftMaxConns + 5*l.RaftMaxConnsPerClient + l.GossipMaxConns + 5*l.GossipMaxConnsPerClient
}

// GossipLimits is the caps of l's gossip port: the servers (trusted) count
// against the cap per address only.
func GossipLimits(l ConnLimits, trusted func(string) bool) connlimit.Limits {
	return connlimit.Limits{Max: l.GossipMaxConns, PerClient: l.GossipMaxConnsPerClient, Trusted: trusted, TrustedPastMax: true}
}

// Validate checks the limits, naming the flag of a bad one.
func (l ConnLimits) Validate() error {
	var errs []error
	check := func(name string, total, perClient int) {
		switch {
		case total < 1:
			errs = append(errs, fmt.Errorf("%s-max-conns: %d must be at least 1", name, total))
		case perClient < 1 || perClient > total:
			errs = append(errs, fmt.Errorf("%s-max-conns-per-client: %d must be between 1 and %s-max-conns (%d)", name, perClient, name, total))
		}
	}
	check("raft", l.RaftMaxConns, l.RaftMaxConnsPerClient)
	check("gossip", l.GossipMaxConns, l.GossipMaxConnsPerClient)
	if l.HandshakeTimeout <= 0 {
		errs = append(errs, fmt.Errorf("raft-handshake-timeout: %v must be positive", l.HandshakeTimeout))
	}
	return errors.Join(errs...)
}
