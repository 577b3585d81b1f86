package cluster

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// tcpStream is Raft's stream layer over plain TCP, its listener within
// the Raft connection limits (limitRaftListener).
type tcpStream struct {
	net.Listener
	advertise net.Addr
}

func newTCPStream(bind string, advertise net.Addr, limits ConnLimits, trusted func(string) bool) (*tcpStream, *connGate, error) {
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, nil, fmt.Errorf("raft listen on %s: %w", bind, err)
	}
	limited, gate := limitRaftListener(ln, limits, trusted, nil)
	return &tcpStream{Listener: limited, advertise: advertise}, gate, nil
}

// Dial implements raft.StreamLayer: address may name the server id
// (peerAddress), which plain TCP cannot check.
func (s *tcpStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	_, addr, _ := splitPeerAddress(address)
	return net.DialTimeout("tcp", string(addr), timeout)
}

// Addr implements raft.StreamLayer: the address peers dial.
func (s *tcpStream) Addr() net.Addr { return s.advertise }

// raftTransport is Raft over TCP, or over mutual TLS when cfg.TLS is on,
// its listener within cfg.Conns; trusted tells the addresses of the
// cluster's servers. The same port carries the confirmation channel:
// serve answers its inbound connections, and the dialer returned opens
// outbound ones, with TLS when Raft has it. Every dial names the server id
// it is for (idTransport, confirmDialer), and with TLS the certificate
// that answers must name that id. The transport's log lines are limited
// (limitedLogger); suppressed is called for each one left out.
func raftTransport(cfg Config, advertise net.Addr, trusted func(string) bool, serve func(net.Conn), suppressed func()) (raft.Transport, confirmDialer, *connGate, error) {
	log := newLimitedLogger(cfg.Logger.Named("transport"), logSourceRaftTransport, suppressed)
	var stream raft.StreamLayer
	var gate *connGate
	var err error
	if cfg.TLS.Enabled() {
		stream, gate, err = newTLSStream(cfg.RaftAddr, advertise, cfg.TLS, cfg.ClusterName, cfg.Conns, trusted)
	} else {
		stream, gate, err = newTCPStream(cfg.RaftAddr, advertise, cfg.Conns, trusted)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	dial := func(id raft.ServerID, addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
		return stream.Dial(peerAddress(id, addr), timeout)
	}
	return idTransport{raft.NewNetworkTransportWithLogger(newMuxStream(stream, serve), 3, 10*time.Second, log)}, dial, gate, nil
}

// IsServerIP reports whether ip is the host of the Raft address of a server
// of the current configuration (or of the initial cluster, before Raft
// runs), a host name resolved to ip included: such connections count only
// against the cap per address.
func (n *Node) IsServerIP(ip string) bool {
	var hosts []string
	if r := n.raftReady.Load(); r != nil {
		if f := r.GetConfiguration(); f.Error() == nil {
			for _, s := range f.Configuration().Servers {
				if host, _, err := net.SplitHostPort(string(s.Address)); err == nil {
					hosts = append(hosts, host)
				}
			}
		}
	}
	for _, p := range n.cfg.InitialCluster {
		if host, _, err := net.SplitHostPort(p.RaftAddr); err == nil {
			hosts = append(hosts, host)
		}
	}
	for _, h := range hosts {
		if h == ip {
			return true
		}
	}
	for _, h := range hosts {
		if net.ParseIP(h) == nil && slices.Contains(n.resolver.lookup(h), ip) {
			return true
		}
	}
	return false
}

// namedAddr is a Raft address as given (a host name kept as it is), for
// the stream layer to announce.
type namedAddr string

func (a namedAddr) Network() string { return "tcp" }
func (a namedAddr) String() string  { return string(a) }

// hostCache resolves host names for a few seconds at a time: an inbound
// connection asks for every server's, and a name's IPs change only when a
// server moves.
type hostCache struct {
	mu      sync.Mutex
	entries map[string]hostEntry
}

type hostEntry struct {
	ips []string
	at  time.Time
}

// hostCacheTTL is how long a resolution is used; hostLookupTimeout bounds
// one.
const (
	hostCacheTTL      = 5 * time.Second
	hostLookupTimeout = time.Second
)

// lookup returns the IPs of host, resolved at most hostCacheTTL ago (none
// when it does not resolve).
func (c *hostCache) lookup(host string) []string {
	c.mu.Lock()
	e, ok := c.entries[host]
	c.mu.Unlock()
	if ok && time.Since(e.at) < hostCacheTTL {
		return e.ips
	}
	ctx, cancel := context.WithTimeout(context.Background(), hostLookupTimeout)
	defer cancel()
	ips, _ := net.DefaultResolver.LookupHost(ctx, host)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = make(map[string]hostEntry)
	}
	if len(c.entries) > 1024 { // bounded: names come from the configuration
		clear(c.entries)
	}
	c.entries[host] = hostEntry{ips: ips, at: time.Now()}
	return ips
}
