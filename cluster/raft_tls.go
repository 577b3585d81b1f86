package cluster

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/certs"
)

// tlsStream is Raft's stream layer over mutual TLS. Both ends prove the
// server role: a connection is accepted only from, and made only to, a
// certificate signed by the cluster's CA that carries
// server.<cluster-name>.tenure, may serve and dial, and names exactly one
// node id (certs.VerifyServer). A dial to server X (Raft's RPCs and
// pipelines, the confirmation channel, the admission proof) also requires
// that the id is X (certs.VerifyServerID), so that one server's
// certificate never answers for another's slot. A client certificate of
// the same CA, a server of another cluster, or any certificate of another
// CA is refused in the handshake, before Raft reads a byte.
//
// Inbound, the listener requires a server certificate that names an id,
// any id: it does not bind the id in a Raft RPC's header to the
// certificate's (every holder of a server certificate is a server of the
// cluster; docs/adr/0026).
type tlsStream struct {
	net.Listener
	advertise net.Addr
	dial      raftDialer
}

// raftDialer makes the TLS configuration of a dial to server id.
type raftDialer struct {
	out     *tls.Config
	roots   *x509.CertPool
	cluster string
}

// config returns the configuration of a dial to server id: its
// certificate must name id (with peerIdentity.checkIDs), and carry the
// server role in any case.
func (d raftDialer) config(id raft.ServerID) *tls.Config {
	c := d.out.Clone()
	if peerIdentity.checkIDs {
		c.VerifyConnection = certs.VerifyServerIDConnection(d.roots, d.cluster, string(id))
	} else {
		c.VerifyConnection = func(cs tls.ConnectionState) error { return verifyRoleOnly(cs, d.roots, d.cluster) }
	}
	return c
}

// verifyRoleOnly is the check before node ids were bound (the negative
// control): the server role, whatever id the certificate names, if any.
func verifyRoleOnly(cs tls.ConnectionState, roots *x509.CertPool, cluster string) error {
	err := certs.VerifyServer(cs.PeerCertificates, roots, cluster)
	if errors.Is(err, certs.ErrNoServerID) {
		return nil
	}
	return err
}

// raftTLS returns the configurations of Raft's TLS listener (in) and of
// its dials (out): both require the peer to prove the server role of
// clusterName with a certificate of files.CAFile that names a node id; a
// dial also requires the id it dials (raftDialer.config).
func raftTLS(files certs.Files, clusterName string) (in *tls.Config, out raftDialer, err error) {
	if in, err = certs.ServerConfig(files); err != nil {
		return nil, raftDialer{}, err
	}
	if out.out, err = certs.ClientConfig(files); err != nil {
		return nil, raftDialer{}, err
	}
	roots, err := certs.LoadPool(files.CAFile)
	if err != nil {
		return nil, raftDialer{}, err
	}
	out.roots, out.cluster = roots, clusterName
	verify := certs.VerifyServerConnection(roots, clusterName)
	if !peerIdentity.checkIDs {
		verify = func(cs tls.ConnectionState) error { return verifyRoleOnly(cs, roots, clusterName) }
	}
	in.ClientCAs, in.ClientAuth, in.VerifyConnection = roots, tls.RequireAndVerifyClientCert, verify
	// Peers are dialled at their Raft address but verified by their role
	// and id, which VerifyConnection checks in full: the chain, the server
	// name of the cluster, both key usages and the node id.
	out.out.InsecureSkipVerify = true
	return in, out, nil
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
// member (membership.Gossip.ProveAgain); the dial and handshake take at most
// proofTimeout.
func TLSProof(files certs.Files, clusterName string) (func(Member) error, error) {
	_, out, err := raftTLS(files, clusterName)
	if err != nil {
		return nil, err
	}
	byName := ClusterNameProof(clusterName)
	return func(m Member) error {
		if err := byName(m); err != nil {
			return err
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: proofTimeout}, "tcp", m.Meta.RaftAddr, out.config(raft.ServerID(m.Meta.ID)))
		if err != nil {
			return fmt.Errorf("%w: its Raft address %s did not prove to be server %s: %w", ErrNotProven, m.Meta.RaftAddr, m.Meta.ID, err)
		}
		return conn.Close()
	}, nil
}

// proofTimeout bounds one admission check with TLS, the dial and the
// handshake together: the leader runs it on its reconciling goroutine, and
// an operator's readmit waits for it.
const proofTimeout = 2 * time.Second

// newTLSStream listens on bind for Raft over TLS, within limits (see
// limitRaftListener), and dials peers with the same certificate.
func newTLSStream(bind string, advertise net.Addr, files certs.Files, clusterName string, limits ConnLimits, trusted func(string) bool) (*tlsStream, *connGate, error) {
	in, out, err := raftTLS(files, clusterName)
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, nil, fmt.Errorf("raft listen on %s: %w", bind, err)
	}
	limited, gate := limitRaftListener(ln, limits, trusted, func(l net.Listener) net.Listener { return tls.NewListener(l, in) })
	return &tlsStream{Listener: limited, advertise: advertise, dial: out}, gate, nil
}

// errNoPeerID: the stream layer was asked to dial an address that names
// no server id (peerAddress): with TLS it would not know whose
// certificate must answer.
var errNoPeerID = errors.New("raft dial: the address names no server id")

// Dial implements raft.StreamLayer: a TLS connection whose handshake has
// verified the peer's role and, address being peerAddress(id, addr), that
// its certificate names id; or an error.
func (s *tlsStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	id, addr, ok := splitPeerAddress(address)
	if !ok && peerIdentity.checkIDs {
		return nil, fmt.Errorf("%w: %s", errNoPeerID, address)
	}
	d := &net.Dialer{Timeout: timeout}
	conn, err := tls.DialWithDialer(d, "tcp", string(addr), s.dial.config(id))
	if err != nil {
		return nil, fmt.Errorf("raft dial %s at %s: %w", id, addr, err)
	}
	return conn, nil
}

// Addr implements raft.StreamLayer: the address peers dial.
func (s *tlsStream) Addr() net.Addr { return s.advertise }
