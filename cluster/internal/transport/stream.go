package transport

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/connlimit"
	"github.com/tenure-io/tenure/cluster/internal/nodeconfig"
	"github.com/tenure-io/tenure/cluster/internal/rounds"
)

// stream is Raft's stream layer over TCP, or over mutual TLS (raftTLS,
// raftDialer), its listener within the Raft connection limits.
type stream struct {
	net.Listener
	advertise net.Addr
	dial      func(address raft.ServerAddress, timeout time.Duration) (net.Conn, error)
}

// newStream listens on the Raft address for Raft, over TLS when it is on,
// within gate and the handshake deadline; it dials peers with the same
// certificate.
func newStream(cfg Config, gate *connlimit.Gate) (*stream, error) {
	s := &stream{advertise: cfg.Advertise, dial: dialTCP}
	var wrap func(net.Listener) net.Listener
	if cfg.Node.TLS.Enabled() {
		in, out, err := raftTLS(cfg.Node.TLS, cfg.Node.ClusterName, cfg.CheckIDs)
		if err != nil {
			return nil, err
		}
		wrap = func(l net.Listener) net.Listener { return tls.NewListener(l, in) }
		s.dial = out.dial
	}
	ln, err := net.Listen("tcp", cfg.Node.RaftAddr)
	if err != nil {
		return nil, fmt.Errorf("raft listen on %s: %w", cfg.Node.RaftAddr, err)
	}
	// The caps on the raw connections first, so that a refused one costs
	// no handshake; then TLS, if on; then the handshake deadline.
	ln = connlimit.Listener(ln, gate)
	if wrap != nil {
		ln = wrap(ln)
	}
	s.Listener = connlimit.HandshakeDeadline(ln, cfg.Node.Conns.HandshakeTimeout)
	return s, nil
}

// Dial implements raft.StreamLayer.
func (s *stream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return s.dial(address, timeout)
}

// dialTCP dials over plain TCP: address may name the server id
// (peerAddress), which plain TCP cannot check.
func dialTCP(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	_, addr, _ := splitPeerAddress(address)
	return net.DialTimeout("tcp", string(addr), timeout)
}

// Addr implements raft.StreamLayer: the address peers dial.
func (s *stream) Addr() net.Addr { return s.advertise }

// Config is what New needs.
type Config struct {
	// Node is the server's configuration: Raft listens on its RaftAddr,
	// over mutual TLS between servers of its ClusterName when its TLS is
	// on (raftTLS), within the Raft caps of its Conns (connlimit.Gate;
	// Trusted tells the addresses of the cluster's servers, which count
	// against the cap per address only) and their handshake timeout.
	Node    nodeconfig.Config
	Trusted func(ip string) bool
	// Advertise is the address peers dial.
	Advertise net.Addr
	// CheckIDs binds each dial to the node id that the answering
	// certificate names (off only in the negative control
	// tenure_unsafe_identity).
	CheckIDs bool
	// Serve answers the inbound connections of the side channels: those
	// whose first byte is rounds.Magic or AddrMagic (muxStream).
	Serve func(net.Conn)
	// Logger takes the network transport's log lines.
	Logger hclog.Logger
}

// New returns Raft over TCP, or over mutual TLS when TLS is on, its
// listener within the caps of the Gate returned. The same port carries
// the side channels: cfg.Serve answers their inbound connections, and the
// dialer returned opens outbound ones, with TLS when Raft has it. Every
// dial names the server id it is for (idTransport, the dialer), and with
// TLS (and cfg.CheckIDs) the certificate that answers must name that id.
func New(cfg Config) (raft.Transport, rounds.Dialer, *connlimit.Gate, error) {
	gate := connlimit.New(connlimit.Limits{Max: cfg.Node.Conns.RaftMaxConns, PerClient: cfg.Node.Conns.RaftMaxConnsPerClient, Trusted: cfg.Trusted, TrustedPastMax: true})
	stream, err := newStream(cfg, gate)
	if err != nil {
		return nil, nil, nil, err
	}
	dial := func(id raft.ServerID, addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
		return stream.Dial(peerAddress(id, addr), timeout)
	}
	return idTransport{raft.NewNetworkTransportWithLogger(newMuxStream(stream, cfg.Serve, []byte{rounds.Magic, AddrMagic}), 3, 10*time.Second, cfg.Logger)}, dial, gate, nil
}

// NamedAddr is a Raft address as given (a host name kept as it is), for
// the stream layer to announce.
type NamedAddr string

// Network implements net.Addr.
func (a NamedAddr) Network() string { return "tcp" }

// String implements net.Addr.
func (a NamedAddr) String() string { return string(a) }

// HostCache resolves host names for a few seconds at a time: an inbound
// connection asks for every server's, and a name's IPs change only when a
// server moves.
// Its zero value is ready; its methods are safe for concurrent use.
type HostCache struct {
	mu      sync.Mutex
	entries map[string]hostEntry
}

type hostEntry struct {
	ips []string
	at  time.Time
}

// HostCacheTTL is how long a resolution is used; hostLookupTimeout bounds
// one.
const (
	HostCacheTTL      = 5 * time.Second
	hostLookupTimeout = time.Second
)

// Lookup returns the IPs of host, resolved at most HostCacheTTL ago (none
// when it does not resolve).
func (c *HostCache) Lookup(host string) []string {
	c.mu.Lock()
	e, ok := c.entries[host]
	c.mu.Unlock()
	if ok && time.Since(e.at) < HostCacheTTL {
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
