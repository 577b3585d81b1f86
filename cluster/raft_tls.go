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

// raftTLS returns the configurations of Raft's TLS listener (in) and of
// its dials (out): both require the peer to prove the server role of
// clusterName with a certificate of files.CAFile.
func raftTLS(files certs.Files, clusterName string) (in, out *tls.Config, err error) {
	if in, err = certs.ServerConfig(files); err != nil {
		return nil, nil, err
	}
	if out, err = certs.ClientConfig(files); err != nil {
		return nil, nil, err
	}
	roots, err := certs.LoadPool(files.CAFile)
	if err != nil {
		return nil, nil, err
	}
	verify := certs.VerifyServerConnection(roots, clusterName)
	in.ClientCAs, in.ClientAuth, in.VerifyConnection = roots, tls.RequireAndVerifyClientCert, verify
	// Peers are dialled at their Raft address but verified by their role,
	// which VerifyConnection checks in full: the chain, the server name of
	// the cluster, and both key usages.
	out.InsecureSkipVerify, out.VerifyConnection = true, verify
	return in, out, nil
}

// TLSProof is the admission check of a cluster with TLS: the member
// announces this cluster's name, and its Raft address answers a TLS
// handshake with a certificate of the cluster's CA that carries the server
// role (the check Raft itself makes of every peer). A gossip member with
// no such certificate is never added to Raft, not even as a non-voter.
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
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", m.Meta.RaftAddr, out)
		if err != nil {
			return fmt.Errorf("%w: its Raft address %s did not prove the server role: %w", ErrNotProven, m.Meta.RaftAddr, err)
		}
		return conn.Close()
	}, nil
}

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
