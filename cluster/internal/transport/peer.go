package transport

import (
	"io"
	"strings"

	"github.com/hashicorp/raft"
)

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
// certificate that answers (raftDialer.dial).
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
