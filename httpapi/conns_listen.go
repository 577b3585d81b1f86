package httpapi

import (
	"net"
	"sync"
)

// LimitListener bounds the connections that ln hands to the HTTP server
// at limits.FileDescriptors: past MaxConns the server still answers 429
// overloaded (with Retry-After), but a connection past that overflow is
// closed as soon as it is accepted, unread, so that a flood of idle
// connections cannot take every file descriptor of the process (Raft,
// gossip and the data files need theirs). The last PeerReserve places are
// kept for the servers of the cluster (limits.Trusted).
func LimitListener(ln net.Listener, limits ConnLimits) net.Listener {
	return &limitListener{Listener: ln, max: limits.FileDescriptors(), reserve: limits.PeerReserve(), trusted: limits.Trusted}
}

type limitListener struct {
	net.Listener
	max, reserve int
	trusted      func(ip string) bool

	mu   sync.Mutex
	open int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		max := l.max
		if l.trusted == nil || !l.trusted(clientIP(c)) {
			max -= l.reserve
		}
		l.mu.Lock()
		admit := l.open < max
		if admit {
			l.open++
		}
		l.mu.Unlock()
		if !admit {
			c.Close()
			continue
		}
		return &countedConn{Conn: c, l: l}, nil
	}
}

// countedConn gives its place back once, at Close.
type countedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return c.Conn.Close()
}
