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
)

// raftDialer makes the TLS configuration of a dial to server id, for
// Raft's stream layer over mutual TLS (stream). Both ends prove the
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

// errNoPeerID: the stream layer was asked to dial an address that names
// no server id (peerAddress): with TLS it would not know whose
// certificate must answer.
var errNoPeerID = errors.New("raft dial: the address names no server id")

// dial is the TLS dial of the stream layer: a connection whose handshake
// has verified the peer's role and, address being peerAddress(id, addr),
// that its certificate names id; or an error.
func (d raftDialer) dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	id, addr, ok := splitPeerAddress(address)
	if !ok && d.checkIDs {
		return nil, fmt.Errorf("%w: %s", errNoPeerID, address)
	}
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", string(addr), d.config(id))
	if err != nil {
		return nil, fmt.Errorf("raft dial %s at %s: %w", id, addr, err)
	}
	return conn, nil
}
