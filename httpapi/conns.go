package httpapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
)

// ConnLimits bound what HTTP clients can hold open on one server: the
// connections (over all clients, and per client address) and how long a
// connection may stay idle or take to send its request.
type ConnLimits struct {
	// MaxConns bounds the open connections; MaxConnsPerClient those of one
	// client IP address. A connection past either is answered 503
	// overloaded with Retry-After and closed (after ReadHeaderTimeout if
	// it sends nothing).
	MaxConns, MaxConnsPerClient int
	// ReadHeaderTimeout bounds the wait for a request's headers, and
	// ReadTimeout for the whole request (a slow body is cut); IdleTimeout
	// closes a keep-alive connection that sends nothing more.
	ReadHeaderTimeout, ReadTimeout, IdleTimeout time.Duration
	// WriteTimeout bounds the answer; it must exceed the longest blocking
	// wait plus the write timeout, or blocking queries would be cut.
	WriteTimeout time.Duration
	// Trusted, if not nil, reports whether a client IP address is one of
	// a server of the cluster (cluster.Node.IsServerIP): the last
	// PeerReserve connections under MaxConns are kept for those, so that
	// a flood from elsewhere cannot stop the servers from forwarding to
	// this one.
	Trusted func(ip string) bool
}

// PeerReserve is how many of MaxConns only Trusted addresses may use: a
// quarter of them, at most 64.
func (l ConnLimits) PeerReserve() int { return min(64, l.MaxConns/4) }

// FileDescriptors is how many file descriptors the HTTP listener may hold
// at most: MaxConns, and the connections past it that are accepted and
// answered 503 too_many_connections (LimitListener closes any beyond
// those at once, unanswered).
func (l ConnLimits) FileDescriptors() int { return l.MaxConns + min(1024, l.MaxConns/8+16) }

// DefaultConnLimits suit one server of a cluster whose longest blocking
// wait is maxWait.
func DefaultConnLimits(maxWait time.Duration) ConnLimits {
	return ConnLimits{
		MaxConns:          8192,
		MaxConnsPerClient: 2048,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		WriteTimeout:      maxWait + time.Minute,
	}
}

// Validate checks the limits, naming the flag of a bad one.
func (l ConnLimits) Validate() error {
	switch {
	case l.MaxConns < 1:
		return fmt.Errorf("http-max-conns: %d must be at least 1", l.MaxConns)
	case l.MaxConnsPerClient < 1 || l.MaxConnsPerClient > l.MaxConns:
		return fmt.Errorf("http-max-conns-per-client: %d must be between 1 and http-max-conns (%d)", l.MaxConnsPerClient, l.MaxConns)
	case l.ReadHeaderTimeout <= 0, l.ReadTimeout <= 0, l.IdleTimeout <= 0, l.WriteTimeout <= 0:
		return errors.New("http timeouts must be positive")
	}
	return nil
}

// NewHTTPServer returns the http.Server that serves h within limits. Its
// error log is errorLog with the lines limited (limitedErrorLog): a flood
// of failed TLS handshakes writes a bounded log.
func NewHTTPServer(h http.Handler, limits ConnLimits, errorLog *log.Logger) (*http.Server, error) {
	if err := limits.Validate(); err != nil {
		return nil, err
	}
	if errorLog != nil {
		errorLog = limitedErrorLog(errorLog)
	}
	// MaxConns in all, the last PeerReserve of them for Trusted addresses
	// only, and MaxConnsPerClient per client address.
	gate := cluster.NewConnGate(cluster.GateLimits{Max: limits.MaxConns, PerClient: limits.MaxConnsPerClient,
		Trusted: limits.Trusted, Reserve: limits.PeerReserve()})
	c := &connCounter{limits: limits, gate: gate, over: make(map[net.Conn]struct{})}
	return &http.Server{
		Handler:           c.wrap(h),
		ReadHeaderTimeout: limits.ReadHeaderTimeout,
		ReadTimeout:       limits.ReadTimeout,
		WriteTimeout:      limits.WriteTimeout,
		IdleTimeout:       limits.IdleTimeout,
		ErrorLog:          errorLog,
		ConnState:         c.state,
		ConnContext:       c.context,
	}, nil
}

// connCounter counts the open connections in gate. A connection opened
// past a limit is marked: its requests are answered 503 and it is closed.
// Marked connections do not count against the limits: they hold no place
// that a server of the cluster (Trusted) could need.
type connCounter struct {
	limits ConnLimits
	gate   *cluster.ConnGate

	mu   sync.Mutex
	over map[net.Conn]struct{}
}

type overKey struct{}

// leaveKey holds, in the context of a connection's requests, the function
// that uncounts it: a handler that hijacks the connection (the request
// stream) calls it when it closes the connection, so that the connection
// counts against the limits for as long as it is open.
type leaveKey struct{}

// context counts a new connection (net/http calls ConnContext once for
// each, before any of its states) or, past a limit, marks it.
func (c *connCounter) context(ctx context.Context, conn net.Conn) context.Context {
	if ip := cluster.RemoteIP(conn.RemoteAddr()); c.gate.Enter(ip) {
		return context.WithValue(ctx, leaveKey{}, func() { c.gate.Leave(ip) })
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.over[conn] = struct{}{}
	return context.WithValue(ctx, overKey{}, true)
}

// state uncounts a connection at its end. A hijacked connection stays
// counted: its hijacker uncounts it (leaveKey).
func (c *connCounter) state(conn net.Conn, s http.ConnState) {
	if s != http.StateClosed {
		return
	}
	c.mu.Lock()
	_, over := c.over[conn]
	delete(c.over, conn)
	c.mu.Unlock()
	if !over {
		c.gate.Leave(cluster.RemoteIP(conn.RemoteAddr()))
	}
}

// leaveFunc is the function that uncounts the connection of the request
// ctx belongs to; a no-op when the connection was not counted (a server
// built without NewHTTPServer, as in tests).
func leaveFunc(ctx context.Context) func() {
	if f, ok := ctx.Value(leaveKey{}).(func()); ok {
		return f
	}
	return func() {}
}

func (c *connCounter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if over, _ := r.Context().Value(overKey{}).(bool); over {
			w.Header().Set("Connection", "close")
			writeError(w, &apiError{code: wire.CodeTooManyConnections, msg: fmt.Sprintf(
				"too many open connections to this server (at most %d, %d per client address): this connection is closed; retry after Retry-After or on another server",
				c.limits.MaxConns, c.limits.MaxConnsPerClient)})
			return
		}
		h.ServeHTTP(w, r)
	})
}

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

// limitedErrorLog is errorLog (an http.Server's) with its lines limited
// as refusals: those of failed TLS handshakes (a client without a
// certificate of the cluster's CA, a scanner) under one reason, any other
// under another, DefaultRefusalLogLines every DefaultRefusalLogInterval
// each, and then one line that counts the rest.
func limitedErrorLog(errorLog *log.Logger) *log.Logger {
	out := errorLog.Writer()
	prefix, flags := errorLog.Prefix(), errorLog.Flags()
	summary := log.New(out, prefix, flags)
	lim := cluster.NewLogLimiter(DefaultRefusalLogLines, DefaultRefusalLogInterval, func(reason string, n int) {
		summary.Printf("http: %d more %s lines left out of the log in %v", n, reason, DefaultRefusalLogInterval)
	})
	return log.New(limitedWriter{out: out, lim: lim}, prefix, flags)
}

// limitedWriter writes the lines of an http.Server's error log within lim.
type limitedWriter struct {
	out io.Writer
	lim *cluster.LogLimiter
}

func (w limitedWriter) Write(p []byte) (int, error) {
	reason := "error log"
	if bytes.Contains(p, []byte("TLS handshake error")) {
		reason = "TLS handshake error"
	}
	if !w.lim.Allow(reason) {
		return len(p), nil
	}
	return w.out.Write(p)
}
