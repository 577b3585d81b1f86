package cluster

import (
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/certs"
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
	// over its Raft port (leader_addr.go).
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

// peerSep separates a server id from its address in the addresses that
// Raft's transport hands the stream layer (peerAddress). Node ids are
// [A-Za-z0-9._-], so it never occurs in one.
const peerSep = "@"

// peerAddress is the address the stream layer dials for server id at addr:
// "id@addr", so that the dial knows whose certificate must answer, and
// the transport's connection pool keeps one server's connections apart
// from another's at the same address.
func peerAddress(id raft.ServerID, addr raft.ServerAddress) raft.ServerAddress {
	return raft.ServerAddress(string(id) + peerSep + string(addr))
}

// splitPeerAddress undoes peerAddress; ok is false for an address that
// names no server id.
func splitPeerAddress(a raft.ServerAddress) (id raft.ServerID, addr raft.ServerAddress, ok bool) {
	before, after, found := strings.Cut(string(a), peerSep)
	if !found || before == "" {
		return "", a, false
	}
	return raft.ServerID(before), raft.ServerAddress(after), true
}

// idTransport is Raft's network transport that dials every peer as the
// server id it is dialled for: each outgoing RPC names the target's
// address as peerAddress(id, target), and the stream layer checks the
// certificate that answers (tlsStream.Dial).
type idTransport struct {
	*raft.NetworkTransport
}

func (t idTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	return t.NetworkTransport.AppendEntriesPipeline(id, peerAddress(id, target))
}

func (t idTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	return t.NetworkTransport.AppendEntries(id, peerAddress(id, target), args, resp)
}

func (t idTransport) RequestVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestVoteRequest, resp *raft.RequestVoteResponse) error {
	return t.NetworkTransport.RequestVote(id, peerAddress(id, target), args, resp)
}

func (t idTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return t.NetworkTransport.RequestPreVote(id, peerAddress(id, target), args, resp)
}

func (t idTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	return t.NetworkTransport.InstallSnapshot(id, peerAddress(id, target), args, resp, data)
}

func (t idTransport) TimeoutNow(id raft.ServerID, target raft.ServerAddress, args *raft.TimeoutNowRequest, resp *raft.TimeoutNowResponse) error {
	return t.NetworkTransport.TimeoutNow(id, peerAddress(id, target), args, resp)
}
