package cluster

import (
	"fmt"

	"github.com/tenure-io/tenure/cluster/internal/certs"
)

// identityPolicy says how far a server trusts what a peer says it is
// (docs/adr/0026). Every real build checks ids and keeps voters in place
// (unsafe_identity_off.go); the negative control of the fault suite (build
// tag tenure_unsafe_identity) has the behaviour before identities were
// bound (unsafe_identity_on.go).
type identityPolicy struct {
	// checkIDs: with TLS, a peer dialled as server X (Raft, the
	// confirmation channel, the admission proof, forwarding) must present
	// a certificate that names node id X.
	checkIDs bool
	// movesVoters: a voter that gossip announces at another address is
	// moved there as a voter (instead of coming back as a non-voter).
	movesVoters bool
	// gossipForwarding: a server's HTTP address (where followers forward
	// and clients follow the leader) is the one the first proven gossip
	// member announcing its id gives, instead of the server's own answer
	// over its Raft port (transport/addrchannel.go).
	gossipForwarding bool
}

// ServerIDsChecked reports whether this build checks the node id that a
// server's certificate names wherever a server is dialled (Raft, the
// leadership rounds, the admission proof, forwarding): true in every build
// but the negative control of the fault suite (tenure_unsafe_identity).
func ServerIDsChecked() bool { return peerIdentity.checkIDs }

// checkOwnCertificate refuses a server whose own certificate names another
// node id than its own, or none: its peers would refuse it (with TLS,
// every dial to a server checks the id its certificate names).
func checkOwnCertificate(cfg Config) error {
	if !cfg.TLS.Enabled() || !peerIdentity.checkIDs {
		return nil
	}
	id, err := certs.OwnServerID(cfg.TLS, cfg.ClusterName)
	if err != nil {
		return fmt.Errorf("tls-cert-file: %s: %w", cfg.TLS.CertFile, err)
	}
	if id != cfg.NodeID {
		return fmt.Errorf("tls-cert-file: %s names node id %q, but -node-id is %q: give each server a certificate of its own id (tenure tls cert create -server -node-id %s)",
			cfg.TLS.CertFile, id, cfg.NodeID, cfg.NodeID)
	}
	return nil
}
