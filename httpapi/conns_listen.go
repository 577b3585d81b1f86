package httpapi

import (
	"net"

	"github.com/tenure-io/tenure/cluster"
)

// LimitListener bounds the connections that ln hands to the HTTP server
// at limits.FileDescriptors: past MaxConns the server still answers 503
// overloaded (with Retry-After), but a connection past that overflow is
// closed as soon as it is accepted, unread, so that a flood of idle
// connections cannot take every file descriptor of the process (Raft,
// gossip and the data files need theirs). The last PeerReserve places are
// kept for the servers of the cluster (limits.Trusted). One client address
// gets MaxConnsPerClient places plus an overflow of its own, so that a
// single flooder cannot take the places of every other client either.
func LimitListener(ln net.Listener, limits ConnLimits) net.Listener {
	return cluster.GateListener(ln, cluster.NewConnGate(cluster.GateLimits{Max: limits.FileDescriptors(), Reserve: limits.PeerReserve(),
		PerClient: limits.MaxConnsPerClient + limits.clientOverflow(), Trusted: limits.Trusted}))
}

// clientOverflow is how many connections of one client past
// MaxConnsPerClient are accepted and answered 503.
func (l ConnLimits) clientOverflow() int { return min(64, l.MaxConnsPerClient/8+4) }
