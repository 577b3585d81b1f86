package rounds

import (
	"io"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// Contact is the leader's view of one follower: when a Raft RPC that this
// node sent to it at Addr was last answered, and the last log index the
// follower reported in that answer.
type Contact struct {
	Addr    raft.ServerAddress
	At      time.Time
	LastLog uint64
}

// Contacts records, per server id, the last answered RPC this node sent.
// Only a leader sends AppendEntries (its heartbeats go out every tenth of
// the heartbeat timeout, to voters and non-voters alike), so on a leader it
// says which followers answer Raft at their configured address and how far
// their logs are: what gossip cannot prove, since anyone on the gossip
// network can announce anything.
type Contacts struct {
	mu sync.Mutex
	m  map[raft.ServerID]Contact
}

// NewContacts returns an empty record.
func NewContacts() *Contacts {
	return &Contacts{m: make(map[raft.ServerID]Contact)}
}

// answered records an answer of id at addr; lastLog is kept from the
// previous answer when known is false (an RPC whose answer has no index).
func (c *Contacts) answered(id raft.ServerID, addr raft.ServerAddress, lastLog uint64, known bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev := c.m[id]
	if !known && prev.Addr == addr {
		lastLog = prev.LastLog
	}
	c.m[id] = Contact{Addr: addr, At: time.Now(), LastLog: lastLog}
}

// Get is the last contact with id at addr; ok is false when this node has
// never had an answer from id at that address.
func (c *Contacts) Get(id raft.ServerID, addr raft.ServerAddress) (Contact, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ct, ok := c.m[id]
	if !ok || ct.Addr != addr {
		return Contact{}, false
	}
	return ct, true
}

// contactTransport is the node's Raft transport with every answered
// AppendEntries and InstallSnapshot recorded in Contacts, and its
// InstallSnapshot calls made one at a time (installs). Everything else
// passes through unchanged.
type contactTransport struct {
	raft.Transport
	seen *Contacts
	// installs holds one token per snapshot this leader is sending. A
	// follower installing a large snapshot (a restore of 39 MB) may not
	// answer heartbeats in time while it decodes it; sent to every
	// follower at once, the leader then hears from no quorum and steps
	// down. One at a time, the others keep answering.
	installs chan struct{}
}

// WithContacts wraps t, recording its answers in seen. Raft looks for the optional WithPreVote interface
// on its transport, so the wrapper has it exactly when t has it.
func WithContacts(t raft.Transport, seen *Contacts) raft.Transport {
	ct := &contactTransport{Transport: t, seen: seen, installs: make(chan struct{}, 1)}
	if _, ok := t.(raft.WithPreVote); ok {
		return &contactPreVoteTransport{ct}
	}
	return ct
}

func (t *contactTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	err := t.Transport.AppendEntries(id, target, args, resp)
	if err == nil {
		t.seen.answered(id, target, resp.LastLog, true)
	}
	return err
}

func (t *contactTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	t.installs <- struct{}{}
	err := t.Transport.InstallSnapshot(id, target, args, resp, data)
	<-t.installs
	if err == nil {
		t.seen.answered(id, target, 0, false)
	}
	return err
}

// Close implements raft.WithClose: Raft closes its transport when it shuts
// down, if the transport can be closed.
func (t *contactTransport) Close() error {
	return closeWrapped(t.Transport)
}

// closeWrapped closes a wrapper's inner transport if it can be closed.
func closeWrapped(tr raft.Transport) error {
	if c, ok := tr.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}

type contactPreVoteTransport struct{ *contactTransport }

func (t *contactPreVoteTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return t.Transport.(raft.WithPreVote).RequestPreVote(id, target, args, resp)
}
