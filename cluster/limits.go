package cluster

import (
	"net"
	"time"

	"github.com/tenure-io/tenure/cluster/internal/connlimit"
	"github.com/tenure-io/tenure/cluster/internal/limitedlog"
)

// The HTTP API caps its connections and its log lines with the limiters
// of the Raft and gossip ports.

// ConnGate counts open connections against GateLimits (connlimit.Gate).
type ConnGate = connlimit.Gate

// NewConnGate returns a gate that admits connections within l.
func NewConnGate(l GateLimits) *ConnGate { return connlimit.New(l) }

// GateLimits are the caps of a ConnGate (connlimit.Limits).
type GateLimits = connlimit.Limits

// GateListener closes, unread, each connection of ln that gate refuses.
func GateListener(ln net.Listener, gate *ConnGate) net.Listener { return connlimit.Listener(ln, gate) }

// RemoteIP is the IP of a connection's remote address, as gates count it.
func RemoteIP(a net.Addr) string { return connlimit.RemoteIP(a) }

// LogLimiter lets through the first lines of each reason per interval and
// counts the rest (limitedlog.Limiter).
type LogLimiter = limitedlog.Limiter

// NewLogLimiter returns a limiter of lines per reason per interval that
// calls summary with the count of each reason's left-out lines.
func NewLogLimiter(lines int, interval time.Duration, summary func(reason string, suppressed int)) *LogLimiter {
	return limitedlog.NewLimiter(lines, interval, summary)
}

// Defaults of a LogLimiter: 10 lines per reason every 10 seconds.
const (
	DefaultLogLines    = limitedlog.DefaultLines
	DefaultLogInterval = limitedlog.DefaultInterval
)
