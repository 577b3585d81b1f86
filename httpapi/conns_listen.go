package httpapi

import (
	"net"
	"sync"
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
	return &limitListener{Listener: ln, max: limits.FileDescriptors(), reserve: limits.PeerReserve(),
		perClient: limits.MaxConnsPerClient + limits.clientOverflow(), trusted: limits.Trusted, open: map[string]int{}}
}

// clientOverflow is how many connections of one client past
// MaxConnsPerClient are accepted and answered 503.
func (l ConnLimits) clientOverflow() int { return min(64, l.MaxConnsPerClient/8+4) }

type limitListener struct {
	net.Listener
	max, reserve, perClient int
	trusted                 func(ip string) bool

	mu    sync.Mutex
	total int
	open  map[string]int // by client IP address
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ip := clientIP(c)
		max := l.max
		if l.trusted == nil || !l.trusted(ip) {
			max -= l.reserve
		}
		l.mu.Lock()
		admit := l.total < max && l.open[ip] < l.perClient
		if admit {
			l.total++
			l.open[ip]++
		}
		l.mu.Unlock()
		if !admit {
			c.Close()
			continue
		}
		return &countedConn{Conn: c, l: l, ip: ip}, nil
	}
}

// countedConn gives its place back once, at Close.
type countedConn struct {
	net.Conn
	l    *limitListener
	ip   string
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.total--
		if c.l.open[c.ip]--; c.l.open[c.ip] <= 0 {
			delete(c.l.open, c.ip)
		}
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
