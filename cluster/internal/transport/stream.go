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
	"github.com/tenure-io/tenure/cluster/internal/certs"
	"github.com/tenure-io/tenure/cluster/internal/connlimit"
	"github.com/tenure-io/tenure/cluster/internal/rounds"
)

// stream is Raft's stream layer over TCP, or over mutual TLS (raftTLS,
// raftDialer), its listener within the Raft connection limits.
type stream struct {
	net.Listener
	advertise net.Addr
	dial      func(address raft.ServerAddress, timeout time.Duration) (net.Conn, error)
}

// newStream listens on cfg.Bind for Raft, over TLS when cfg.TLS is on,
// within gate and the handshake deadline; it dials peers with the same
// certificate.
func newStream(cfg Config, gate *connlimit.Gate) (*stream, error) {
	s := &stream{advertise: cfg.Advertise, dial: dialTCP}
	var wrap func(net.Listener) net.Listener
	if cfg.TLS.Enabled() {
		in, out, err := raftTLS(cfg.TLS, cfg.ClusterName, cfg.CheckIDs)
		if err != nil {
			return nil, err
		}
		wrap = func(l net.Listener) net.Listener { return tls.NewListener(l, in) }
		s.dial = out.dial
	}
	ln, err := net.Listen("tcp", cfg.Bind)
	if err != nil {
		return nil, fmt.Errorf("raft listen on %s: %w", cfg.Bind, err)
	}
	// The caps on the raw connections first, so that a refused one costs
	// no handshake; then TLS, if on; then the handshake deadline.
	ln = connlimit.Listener(ln, gate)
	if wrap != nil {
		ln = wrap(ln)
	}
	s.Listener = connlimit.HandshakeDeadline(ln, cfg.HandshakeTimeout)
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
	// Bind is the address to listen on; Advertise the one peers dial.
	Bind      string
	Advertise net.Addr
	// TLS, when enabled, makes Raft mutual TLS between servers of
	// ClusterName (raftTLS); CheckIDs binds each dial to the node id
	// that the answering certificate names (off only in the negative
	// control tenure_unsafe_identity).
	TLS         certs.Files
	ClusterName string
	CheckIDs    bool
	// MaxConns and MaxConnsPerClient cap the inbound connections
	// (connlimit.Gate; Trusted tells the addresses of the cluster's
	// servers, which count against the cap per address only);
	// HandshakeTimeout bounds the time from accepting one to its first
	// bytes of Raft (with TLS: to the end of the handshake).
	MaxConns, MaxConnsPerClient int
	Trusted                     func(ip string) bool
	HandshakeTimeout            time.Duration
	// Serve answers the inbound connections of the side channels: those
	// whose first byte is rounds.Magic or AddrMagic (muxStream).
	Serve func(net.Conn)
	// Logger takes the network transport's log lines.
	Logger hclog.Logger
}

// New returns Raft over TCP, or over mutual TLS when cfg.TLS is on, its
// listener within the caps of the Gate returned. The same port carries
// the side channels: cfg.Serve answers their inbound connections, and the
// dialer returned opens outbound ones, with TLS when Raft has it. Every
// dial names the server id it is for (idTransport, the dialer), and with
// TLS (and cfg.CheckIDs) the certificate that answers must name that id.
func New(cfg Config) (raft.Transport, rounds.Dialer, *connlimit.Gate, error) {
	gate := connlimit.New(connlimit.Limits{Max: cfg.MaxConns, PerClient: cfg.MaxConnsPerClient, Trusted: cfg.Trusted, TrustedPastMax: true})
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
