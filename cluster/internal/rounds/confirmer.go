package rounds

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Confirmer is the leader's side of the leadership check (docs/adr/0002):
// a round sends every other voter of the current configuration a request
// with the leader's term and the round's id, and succeeds once a quorum,
// the leader included, has answered yes to that round. Rounds may overlap;
// an answer counts only for the round it names.
type Confirmer struct {
	self      raft.ServerID
	dial      Dialer
	timeout   time.Duration // a round without a quorum by then fails
	closedErr error         // what a round returns once Close was called
	log       hclog.Logger

	mu     sync.Mutex
	next   uint64
	rounds map[uint64]*confirmRound
	peers  map[raft.ServerAddress]*confirmPeer
	// lastYes is used only by the negative control of the fault suite
	// (acceptOlderRounds): the term of each voter's latest yes.
	lastYes map[raft.ServerID]uint64
	closed  bool
}

// Dialer opens a connection to the confirmation channel of server
// id at addr (with TLS, only if the certificate that answers names id);
// the Confirmer writes Magic and Version.
type Dialer func(id raft.ServerID, addr raft.ServerAddress, timeout time.Duration) (net.Conn, error)

// NewConfirmer returns the confirmer of server self, which dials the
// other voters with dial. A round without a quorum after timeout fails;
// once Close was called, a round returns closed (the caller's shutdown
// error).
func NewConfirmer(self raft.ServerID, dial Dialer, timeout time.Duration, closed error, log hclog.Logger) *Confirmer {
	return &Confirmer{self: self, dial: dial, timeout: timeout, closedErr: closed, log: log,
		rounds: map[uint64]*confirmRound{}, peers: map[raft.ServerAddress]*confirmPeer{}, lastYes: map[raft.ServerID]uint64{}}
}

// minRoundTimeout is the least time a round waits for a quorum.
const minRoundTimeout = 500 * time.Millisecond

// Timeout is how long a leadership round waits for a quorum of yes
// before it fails: twice the election timeout, at least minRoundTimeout,
// so that a short election timeout does not fail rounds on a loaded
// machine. Safety does not depend on it: a round that waits longer still
// counts only answers to itself.
func Timeout(electionTimeout time.Duration) time.Duration {
	return max(2*electionTimeout, minRoundTimeout)
}

// confirmRound is one round in flight.
type confirmRound struct {
	term   uint64
	voters map[raft.ServerID]raft.ServerAddress // voters not counted yet
	need   int                                  // yes answers still needed
	noMore int                                  // voters that may still say yes
	done   chan error                           // one result
	ended  bool
}

// errNotConfirmed: no quorum said yes in time.
var errNotConfirmed = errors.New("leadership not confirmed by a quorum")

// LeaderRaft is what CheckLeadership reads of the leader's Raft
// (*raft.Raft has it).
type LeaderRaft interface {
	CurrentTerm() uint64
	CommitIndex() uint64
	State() raft.RaftState
	GetConfiguration() raft.ConfigurationFuture
}

// CheckLeadership proves that this node still led at some moment after
// the call began, and returns the commit index it read at the start. It
// asks every other voter of the current configuration, over the
// confirmation channel, whether it is still in this term with no other
// leader, and needs yes to this round from a quorum (itself included);
// then it checks that it is still leader in the same term. Nothing is
// written to the log.
//
// A voter that voted in a newer term has that newer term: it says no. So
// no newer leader had been elected before the call began
// (docs/adr/0002-lease-time-on-failover.md). raft.VerifyLeader is not
// used: it can be satisfied by the answer to a heartbeat sent before the
// call, which proves nothing about the time after it.
func (c *Confirmer) CheckLeadership(r LeaderRaft) (uint64, error) {
	term := r.CurrentTerm()
	commit := r.CommitIndex()
	if r.State() != raft.Leader {
		return 0, raft.ErrNotLeader
	}
	f := r.GetConfiguration()
	if err := f.Error(); err != nil {
		return 0, err
	}
	if err := c.Confirm(term, f.Configuration()); err != nil {
		return 0, err
	}
	if r.State() != raft.Leader || r.CurrentTerm() != term {
		return 0, raft.ErrLeadershipLost
	}
	return commit, nil
}

// Confirm runs one round for term over the voters of conf and reports nil
// once a quorum of them, this server included if it is one, answered yes
// to this round.
func (c *Confirmer) Confirm(term uint64, conf raft.Configuration) error {
	rd := &confirmRound{term: term, voters: map[raft.ServerID]raft.ServerAddress{}, done: make(chan error, 1)}
	var others []raft.Server
	for _, s := range conf.Servers {
		if s.Suffrage != raft.Voter {
			continue
		}
		rd.need++
		if s.ID != c.self {
			rd.voters[s.ID] = s.Address
			others = append(others, s)
		}
	}
	rd.need = rd.need/2 + 1
	rd.noMore = len(others)
	if c.isVoter(conf) {
		rd.need-- // this leader's own yes
	}
	if rd.need <= 0 {
		return nil
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return c.closedErr
	}
	c.next++
	id := c.next
	if acceptOlderRounds {
		for v := range rd.voters {
			if c.lastYes[v] == term {
				rd.count(v, true)
			}
		}
		if rd.ended {
			c.mu.Unlock()
			return nil
		}
	}
	c.rounds[id] = rd
	peers := make([]*confirmPeer, 0, len(others))
	for _, s := range others {
		peers = append(peers, c.peerLocked(s.ID, s.Address))
	}
	if len(c.peers) > len(others) {
		// A voter was removed or moved to another address since the
		// last round: close its connection rather than keep it forever.
		c.forgetLocked(others)
	}
	c.mu.Unlock()

	req := Request{Round: id, Term: term, Leader: c.self}
	for _, p := range peers {
		p.send(req)
	}
	t := time.NewTimer(c.timeout)
	defer t.Stop()
	var err error
	select {
	case err = <-rd.done:
	case <-t.C:
		err = errNotConfirmed
	}
	c.mu.Lock()
	delete(c.rounds, id)
	c.mu.Unlock()
	return err
}

func (c *Confirmer) isVoter(conf raft.Configuration) bool {
	for _, s := range conf.Servers {
		if s.ID == c.self {
			return s.Suffrage == raft.Voter
		}
	}
	return false
}

// deliver counts an answer that came from addr for the round it names, if
// that round is still open and the answer is from one of its voters, at
// that voter's address.
func (c *Confirmer) deliver(addr raft.ServerAddress, a Answer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if acceptOlderRounds && a.OK {
		c.lastYes[a.Voter] = a.Term
	}
	rd := c.rounds[a.Round]
	if rd == nil || rd.ended {
		return
	}
	if at, ok := rd.voters[a.Voter]; !ok || at != addr {
		return
	}
	if a.Term > rd.term {
		rd.end(fmt.Errorf("%w: voter %s is in a newer term (%d > %d)", raft.ErrLeadershipLost, a.Voter, a.Term, rd.term))
		return
	}
	rd.count(a.Voter, a.OK && a.Term == rd.term)
}

// count records voter's answer; the caller holds the Confirmer's lock.
func (rd *confirmRound) count(voter raft.ServerID, yes bool) {
	delete(rd.voters, voter)
	rd.noMore--
	if yes {
		rd.need--
	}
	switch {
	case rd.need <= 0:
		rd.end(nil)
	case rd.need > rd.noMore:
		rd.end(errNotConfirmed)
	}
}

func (rd *confirmRound) end(err error) {
	if !rd.ended {
		rd.ended = true
		rd.done <- err
	}
}

// peerLocked returns the connection keeper of server id at addr; the
// caller holds c.mu. An address that now stands for another id gets a new
// connection, dialled as that id.
func (c *Confirmer) peerLocked(id raft.ServerID, addr raft.ServerAddress) *confirmPeer {
	p := c.peers[addr]
	if p != nil && p.id != id {
		p.close()
		p = nil
	}
	if p == nil {
		p = newConfirmPeer(c, id, addr)
		c.peers[addr] = p
	}
	return p
}

// forgetLocked closes the connections to every address but those of
// keep; the caller holds c.mu.
func (c *Confirmer) forgetLocked(keep []raft.Server) {
	want := make(map[raft.ServerAddress]raft.ServerID, len(keep))
	for _, s := range keep {
		want[s.Address] = s.ID
	}
	for addr, p := range c.peers {
		if id, ok := want[addr]; !ok || id != p.id {
			p.close()
			delete(c.peers, addr)
		}
	}
}

// Close ends every round and connection.
func (c *Confirmer) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for _, p := range c.peers {
		p.close()
	}
	c.peers = map[raft.ServerAddress]*confirmPeer{}
	for _, rd := range c.rounds {
		rd.end(c.closedErr)
	}
}
