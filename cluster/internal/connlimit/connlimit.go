package connlimit

import (
	"net"
	"sync"
	"time"
)

// Limits are the caps of one port. A connection from an IP address is
// admitted while that address has fewer than PerClient open and the port
// fewer than its cap for the address: Max-Reserve for most, Max for a
// Trusted one, none at all for a Trusted one with TrustedPastMax. The
// caller validates the values against its own flags (every count at
// least 1, PerClient at most Max, Reserve below Max).
type Limits struct {
	// Max bounds the open connections; PerClient those of one remote IP
	// address.
	Max, PerClient int
	// Trusted, if not nil, reports whether an IP address is one of a
	// server of the cluster; nil trusts none.
	Trusted func(ip string) bool
	// Reserve is how many of the Max places only Trusted addresses may
	// take, so that a flood from elsewhere cannot keep the servers out.
	Reserve int
	// TrustedPastMax: Trusted addresses count against PerClient only, so
	// that a flood from elsewhere can never keep them out.
	TrustedPastMax bool
}

// Gate counts the open connections of one port, in all and per remote IP
// address, and admits a new one only within its Limits. Its methods are
// safe for concurrent use.
type Gate struct {
	limits Limits

	mu        sync.Mutex
	open      int
	perClient map[string]int
	refused   uint64
}

// New returns a Gate with nothing open.
func New(l Limits) *Gate {
	return &Gate{limits: l, perClient: make(map[string]int)}
}

// RemoteIP is the IP address of a connection's remote address a (a
// itself if it has no port).
func RemoteIP(a net.Addr) string {
	host, _, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	return host
}

// Enter admits a connection from ip, counting it; false: past a cap, not
// counted (and counted as refused).
func (g *Gate) Enter(ip string) bool {
	trusted := g.limits.Trusted != nil && g.limits.Trusted(ip)
	capped, max := true, g.limits.Max-g.limits.Reserve
	if trusted {
		capped, max = !g.limits.TrustedPastMax, g.limits.Max
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.perClient[ip] >= g.limits.PerClient || (capped && g.open >= max) {
		g.refused++
		return false
	}
	g.open++
	g.perClient[ip]++
	return true
}

// Leave uncounts a connection from ip that Enter admitted.
func (g *Gate) Leave(ip string) {
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

// Admit counts c if the caps allow it, and returns it wrapped so that its
// Close uncounts it once; false: past a cap, c untouched and not counted.
func (g *Gate) Admit(c net.Conn) (net.Conn, bool) {
	ip := RemoteIP(c.RemoteAddr())
	if !g.Enter(ip) {
		return nil, false
	}
	return &gatedConn{Conn: c, gate: g, ip: ip}, true
}

// gatedConn is an admitted connection; Close uncounts it once.
type gatedConn struct {
	net.Conn
	gate *Gate
	ip   string
	once sync.Once
}

func (c *gatedConn) Close() error {
	c.once.Do(func() { c.gate.Leave(c.ip) })
	return c.Conn.Close()
}

// Listener returns ln with every accepted connection past the caps of
// gate closed at once, before it is read (it holds a file descriptor for
// a moment only), and the others handed on counted until their Close.
func Listener(ln net.Listener, gate *Gate) net.Listener {
	return &gatedListener{Listener: ln, gate: gate}
}

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
		if gc, ok := l.gate.Admit(c); ok {
			return gc, nil
		}
		c.Close()
	}
}

// HandshakeDeadline returns ln with every accepted connection given until
// timeout to deliver its first bytes (with TLS, the end of the handshake:
// wrap the TLS listener); one that sends nothing in time is closed by its
// reader's deadline. After its first bytes the connection has no read
// deadline of ours. The connections must be read from one goroutine at a
// time until then.
func HandshakeDeadline(ln net.Listener, timeout time.Duration) net.Listener {
	return &firstReadListener{Listener: ln, timeout: timeout}
}

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
