package rounds

import (
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
