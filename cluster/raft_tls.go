package cluster

import (
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/certs"
)

// tlsStream is Raft's stream layer over mutual TLS. Both ends prove the
// server role: a connection is accepted only from, and made only to, a
// certificate signed by the cluster's CA that carries
// server.<cluster-name>.tenure and may serve and dial (certs.VerifyServer).
// A client certificate of the same CA, a server of another cluster, or any
// certificate of another CA is refused in the handshake, before Raft reads
// a byte.
type tlsStream struct {
	net.Listener
	advertise net.Addr
	dial      *tls.Config
}

// newTLSStream listens on bind for Raft over TLS and dials peers with the
// same certificate.
func newTLSStream(bind string, advertise net.Addr, files certs.Files, clusterName string) (*tlsStream, error) {
	in, err := certs.ServerConfig(files)
	if err != nil {
		return nil, err
	}
	out, err := certs.ClientConfig(files)
	if err != nil {
		return nil, err
	}
	roots, err := certs.LoadPool(files.CAFile)
	if err != nil {
		return nil, err
	}
	verify := certs.VerifyServerConnection(roots, clusterName)
	in.ClientCAs, in.ClientAuth, in.VerifyConnection = roots, tls.RequireAndVerifyClientCert, verify
	// Peers are dialled at their Raft address but verified by their role,
	// which VerifyConnection checks in full: the chain, the server name of
	// the cluster, and both key usages.
	out.InsecureSkipVerify, out.VerifyConnection = true, verify
	ln, err := net.Listen("tcp", bind)
	if err != nil {
		return nil, fmt.Errorf("raft listen on %s: %w", bind, err)
	}
	return &tlsStream{Listener: tls.NewListener(ln, in), advertise: advertise, dial: out}, nil
}

// Dial implements raft.StreamLayer: a TLS connection whose handshake has
// verified the peer's role, or an error.
func (s *tlsStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	d := &net.Dialer{Timeout: timeout}
	conn, err := tls.DialWithDialer(d, "tcp", string(address), s.dial)
	if err != nil {
		return nil, fmt.Errorf("raft dial %s: %w", address, err)
	}
	return conn, nil
}

// Addr implements raft.StreamLayer: the address peers dial.
func (s *tlsStream) Addr() net.Addr { return s.advertise }
