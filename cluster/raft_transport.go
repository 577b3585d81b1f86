package cluster

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"slices"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/certs"
	"github.com/tenure-io/tenure/cluster/internal/membership"
	"github.com/tenure-io/tenure/cluster/internal/rounds"
	"github.com/tenure-io/tenure/cluster/internal/transport"
)

// ServeConfirm answers a leader's confirmation requests on conn (the voter's
// side of the leadership check, docs/adr/0002) until conn fails, then
// closes it. conn starts with rounds.Magic and rounds.Version. The Raft
// port hands such connections here (transport.New); tests that connect
// nodes in memory call it with one end of a pipe.
func (n *Node) ServeConfirm(conn net.Conn) {
	if !n.inbound.Add(conn) {
		conn.Close()
		return
	}
	defer n.inbound.Remove(conn)
	defer conn.Close()
	r := bufio.NewReader(conn)
	var hello [2]byte
	if _, err := io.ReadFull(r, hello[:]); err != nil {
		return
	}
	if hello[0] == transport.AddrMagic {
		transport.ServeAddr(conn, hello[1], n.cfg.NodeID, n.cfg.HTTPAddr, n.log)
		return
	}
	if hello[0] != rounds.Magic || hello[1] != rounds.Version {
		n.log.Warn("confirmation channel: unknown protocol", "from", conn.RemoteAddr(), "magic", hello[0], "version", hello[1])
		return
	}
	ready := func() rounds.RaftState {
		if r := n.raftReady.Load(); r != nil { // nil until the cluster-id check has passed
			return r
		}
		return nil
	}
	voter := rounds.Voter{ID: raft.ServerID(n.cfg.NodeID), Raft: ready, Stopped: n.shutdownCh}
	rounds.Serve(conn, r, voter.Answer, n.log)
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
		if net.ParseIP(h) == nil && slices.Contains(n.resolver.Lookup(h), ip) {
			return true
		}
	}
	return false
}

// TLSProof is the admission check of a cluster with TLS: the member
// announces this cluster's name, and its Raft address answers a TLS
// handshake with a certificate of the cluster's CA that carries the server
// role and names the node id the member announces (the check Raft itself
// makes of every peer it dials). A gossip member with no such certificate
// is never added to Raft, not even as a non-voter: a member announcing n1
// whose Raft address relays to n3 is answered by n3's certificate, which
// names n3, and is refused. A relay to n1 itself passes while n1 lives,
// which is why the leader runs the check again right before it acts on a
// member (gossip.proveAgain); the dial and handshake take at most
// proofTimeout.
func TLSProof(files certs.Files, clusterName string) (func(Member) error, error) {
	prove, err := transport.ProveServer(files, clusterName, peerIdentity.checkIDs)
	if err != nil {
		return nil, err
	}
	byName := membership.ClusterNameProof(clusterName)
	return func(m Member) error {
		if err := byName(m); err != nil {
			return err
		}
		if err := prove(m.Meta.ID, m.Meta.RaftAddr, proofTimeout); err != nil {
			return fmt.Errorf("%w: its Raft address %s did not prove to be server %s: %w", ErrNotProven, m.Meta.RaftAddr, m.Meta.ID, err)
		}
		return nil
	}, nil
}

// proofTimeout bounds one admission check with TLS, the dial and the
// handshake together: the leader runs it on its reconciling goroutine, and
// an operator's readmit waits for it.
const proofTimeout = 2 * time.Second
