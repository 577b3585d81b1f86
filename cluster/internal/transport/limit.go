package transport

import (
	"net"
	"sync"
	"time"
)

// Gate counts the open connections of one port, in all and per remote
// IP address, and admits a new one only within the caps. Its methods are
// safe for concurrent use.
type Gate struct {
	max, perIP int
	// trusted reports whether an IP address is one of a server of the
	// cluster; nil trusts none.
	trusted func(ip string) bool

	mu        sync.Mutex
	open      int
	perClient map[string]int
	refused   uint64
}

// NewGate caps the open connections of a port at max (trusted
// addresses excepted) and those of one remote IP address at perIP.
func NewGate(max, perIP int, trusted func(string) bool) *Gate {
	return &Gate{max: max, perIP: perIP, trusted: trusted, perClient: make(map[string]int)}
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
func (g *Gate) enter(ip string) bool {
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
func (g *Gate) leave(ip string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open--
	if g.perClient[ip]--; g.perClient[ip] <= 0 {
		delete(g.perClient, ip)
	}
}

// Counts is the open connections and how many were refused so far.
func (g *Gate) Counts() (open int, refused uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open, g.refused
}

// gatedConn is an admitted connection; Close uncounts it once.
type gatedConn struct {
	net.Conn
	gate *Gate
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
	gate *Gate
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

// limitRaftListener applies the caps of gate to Raft's listener ln: the
// caps on the raw connections first, so that a refused one costs no
// handshake; wrap adds TLS (or nothing); then the handshake deadline
// (handshake).
func limitRaftListener(ln net.Listener, gate *Gate, handshake time.Duration, wrap func(net.Listener) net.Listener) net.Listener {
	var out net.Listener = &gatedListener{Listener: ln, gate: gate}
	if wrap != nil {
		out = wrap(out)
	}
	return &firstReadListener{Listener: out, timeout: handshake}
}
