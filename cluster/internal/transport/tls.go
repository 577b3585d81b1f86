package transport

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/certs"
	"github.com/tenure-io/tenure/cluster/internal/connlimit"
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
	checkIDs  bool
}

// raftDialer makes the TLS configuration of a dial to server id.
type raftDialer struct {
	out      *tls.Config
	roots    *x509.CertPool
	cluster  string
	checkIDs bool
}

// config returns the configuration of a dial to server id: its
// certificate must name id (with checkIDs), and carry the server role in
// any case.
func (d raftDialer) config(id raft.ServerID) *tls.Config {
	c := d.out.Clone()
	if d.checkIDs {
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
// dial also requires the id it dials (raftDialer.config). Without
// checkIDs, neither checks the id.
func raftTLS(files certs.Files, clusterName string, checkIDs bool) (in *tls.Config, out raftDialer, err error) {
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
	out.roots, out.cluster, out.checkIDs = roots, clusterName, checkIDs
	verify := certs.VerifyServerConnection(roots, clusterName)
	if !checkIDs {
		verify = func(cs tls.ConnectionState) error { return verifyRoleOnly(cs, roots, clusterName) }
	}
	in.ClientCAs, in.ClientAuth, in.VerifyConnection = roots, tls.RequireAndVerifyClientCert, verify
	// Peers are dialled at their Raft address but verified by their role
	// and id, which VerifyConnection checks in full: the chain, the server
	// name of the cluster, both key usages and the node id.
	out.out.InsecureSkipVerify = true
	return in, out, nil
}

// ProveServer returns the check that the Raft port at addr answers a TLS
// handshake with a certificate of files.CAFile that carries the server
// role of clusterName and names node id (without checkIDs: any id), the
// check Raft itself makes of every peer it dials. One check, the dial and
// the handshake, takes at most timeout.
func ProveServer(files certs.Files, clusterName string, checkIDs bool) (func(id, addr string, timeout time.Duration) error, error) {
	_, out, err := raftTLS(files, clusterName, checkIDs)
	if err != nil {
		return nil, err
	}
	return func(id, addr string, timeout time.Duration) error {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", addr, out.config(raft.ServerID(id)))
		if err != nil {
			return err
		}
		return conn.Close()
	}, nil
}

// newTLSStream listens on cfg.Bind for Raft over TLS, within gate and the
// handshake deadline (see limitRaftListener), and dials peers with the
// same certificate.
func newTLSStream(cfg Config, gate *connlimit.Gate) (*tlsStream, error) {
	in, out, err := raftTLS(cfg.TLS, cfg.ClusterName, cfg.CheckIDs)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Bind)
	if err != nil {
		return nil, fmt.Errorf("raft listen on %s: %w", cfg.Bind, err)
	}
	limited := limitRaftListener(ln, gate, cfg.HandshakeTimeout, func(l net.Listener) net.Listener { return tls.NewListener(l, in) })
	return &tlsStream{Listener: limited, advertise: cfg.Advertise, dial: out, checkIDs: cfg.CheckIDs}, nil
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
	if !ok && s.checkIDs {
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
