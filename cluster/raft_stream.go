package cluster

import (
	"fmt"
	"net"
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

// Dial implements raft.StreamLayer.
func (s *tcpStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", string(address), timeout)
}

// Addr implements raft.StreamLayer: the address peers dial.
func (s *tcpStream) Addr() net.Addr { return s.advertise }

// raftTransport is Raft over TCP, or over mutual TLS when cfg.TLS is on,
// its listener within cfg.Conns; trusted tells the addresses of the
// cluster's servers. The same port carries the confirmation channel:
// serve answers its inbound connections, and the dialer returned opens
// outbound ones, with TLS when Raft has it.
func raftTransport(cfg Config, advertise net.Addr, trusted func(string) bool, serve func(net.Conn)) (raft.Transport, confirmDialer, *connGate, error) {
	log := cfg.Logger.Named("transport")
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
	dial := func(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
		return stream.Dial(addr, timeout)
	}
	return raft.NewNetworkTransportWithLogger(newMuxStream(stream, serve), 3, 10*time.Second, log), dial, gate, nil
}

// IsServerIP reports whether ip is the host of the Raft address of a server
// of the current configuration (or of the initial cluster, before Raft
// runs): such connections count only against the cap per address.
func (n *Node) IsServerIP(ip string) bool {
	if r := n.raftReady.Load(); r != nil {
		if f := r.GetConfiguration(); f.Error() == nil {
			for _, s := range f.Configuration().Servers {
				if host, _, err := net.SplitHostPort(string(s.Address)); err == nil && host == ip {
					return true
				}
			}
		}
	}
	for _, p := range n.cfg.InitialCluster {
		if host, _, err := net.SplitHostPort(p.RaftAddr); err == nil && host == ip {
			return true
		}
	}
	return false
}
