package cluster

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
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

// connGate counts the open connections of one port, in all and per remote
// IP address, and admits a new one only within the caps. Its methods are
// safe for concurrent use.
type connGate struct {
	max, perIP int
	// trusted reports whether an IP address is one of a server of the
	// cluster; nil trusts none.
	trusted func(ip string) bool

	mu        sync.Mutex
	open      int
	perClient map[string]int
	refused   uint64
}

func newConnGate(max, perIP int, trusted func(string) bool) *connGate {
	return &connGate{max: max, perIP: perIP, trusted: trusted, perClient: make(map[string]int)}
}

func remoteIP(a net.Addr) string {
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// enter admits a connection from ip, counting it; false: past a cap, not
// counted.
func (g *connGate) enter(ip string) bool {
	trusted := g.trusted != nil && g.trusted(ip)
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.perClient[ip] >= g.perIP || (!trusted && g.open >= g.max) {
		g.refused++
		return false
	}
	g.open++
	g.perClient[ip]++
	return true
}

// leave uncounts a connection from ip admitted by enter.
func (g *connGate) leave(ip string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open--
	if g.perClient[ip]--; g.perClient[ip] <= 0 {
		delete(g.perClient, ip)
	}
}

// counts is the open connections and how many were refused so far.
func (g *connGate) counts() (open int, refused uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open, g.refused
}

// gatedConn is an admitted connection; Close uncounts it once.
type gatedConn struct {
	net.Conn
	gate *connGate
	ip   string
	once sync.Once
}

func (c *gatedConn) Close() error {
	c.once.Do(func() { c.gate.leave(c.ip) })
	return c.Conn.Close()
}

// gatedListener closes, at once, every accepted connection past its gate's
// caps, and hands on the others counted.
type gatedListener struct {
	net.Listener
	gate *connGate
}

func (l *gatedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := remoteIP(c.RemoteAddr())
		if !l.gate.enter(ip) {
			c.Close()
			continue
		}
		return &gatedConn{Conn: c, gate: l.gate, ip: ip}, nil
	}
}

// firstReadListener gives every accepted connection until timeout to
// deliver its first bytes (with TLS, the end of the handshake: wrap the
// TLS listener); after that the connection has no read deadline of ours.
type firstReadListener struct {
	net.Listener
	timeout time.Duration
}

func (l *firstReadListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if err := c.SetReadDeadline(time.Now().Add(l.timeout)); err != nil {
		c.Close()
		return nil, err
	}
	return &firstReadConn{Conn: c}, nil
}

// firstReadConn lifts the handshake deadline once a read returned data.
// Raft reads each connection from one goroutine.
type firstReadConn struct {
	net.Conn
	started bool
}

func (c *firstReadConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 && !c.started {
		c.started = true
		if derr := c.Conn.SetReadDeadline(time.Time{}); derr != nil && err == nil {
			err = derr
		}
	}
	return n, err
}

// limitRaftListener applies limits to Raft's listener ln: the caps on the
// raw connections first, so that a refused one costs no handshake; wrap
// adds TLS (or nothing); then the handshake deadline.
func limitRaftListener(ln net.Listener, l ConnLimits, trusted func(string) bool, wrap func(net.Listener) net.Listener) (net.Listener, *connGate) {
	gate := newConnGate(l.RaftMaxConns, l.RaftMaxConnsPerClient, trusted)
	var out net.Listener = &gatedListener{Listener: ln, gate: gate}
	if wrap != nil {
		out = wrap(out)
	}
	return &firstReadListener{Listener: out, timeout: l.HandshakeTimeout}, gate
}
