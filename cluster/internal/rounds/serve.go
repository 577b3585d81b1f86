package rounds

import (
	"bufio"
	"io"
	"net"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// Serve answers a leader's confirmation requests on conn (the voter's side
// of the leadership check, docs/adr/0002) until conn fails: answer gives
// the answer to each request, read from Raft when it is asked. r reads
// conn and has already consumed Magic and Version. The caller closes conn.
func Serve(conn net.Conn, r *bufio.Reader, answer func(Request) Answer, log hclog.Logger) {
	w := bufio.NewWriter(conn)
	for {
		req, err := readRequest(r)
		if err != nil {
			if err != io.EOF {
				log.Debug("confirmation channel closed", "from", conn.RemoteAddr(), "error", err)
			}
			return
		}
		if err := writeAnswer(w, answer(req)); err != nil {
			return
		}
		// Answer at once unless more requests are already here.
		if r.Buffered() == 0 {
			if err := w.Flush(); err != nil {
				return
			}
		}
	}
}

// Voter is a server's side of the rounds: it answers each request from
// its Raft state as read when the request arrives, so after the leader's
// round began.
type Voter struct {
	// ID is the server's node id.
	ID raft.ServerID
	// Raft is the server's Raft, or nil while it must not answer yet.
	Raft func() RaftState
	// Stopped is closed when the server shuts down: it says no from then.
	Stopped <-chan struct{}
}

// RaftState is what a voter reads of its Raft (*raft.Raft has it).
type RaftState interface {
	LeaderWithID() (raft.ServerAddress, raft.ServerID)
	CurrentTerm() uint64
}

// Answer is the voter's answer to req: yes only by the Confirms rule.
func (v Voter) Answer(req Request) Answer {
	a := Answer{Round: req.Round, Voter: v.ID}
	r := v.Raft()
	if r == nil {
		return a
	}
	select {
	case <-v.Stopped:
		return a
	default:
	}
	_, leader := r.LeaderWithID()
	a.Term = r.CurrentTerm()
	a.OK = Confirms(a.Term, leader, req)
	return a
}

// Confirms is the voter's rule: yes only if its current term is the
// request's term (a voter that has voted in a newer term has a newer
// term: it persists the term before it votes) and it knows of no other
// leader in that term. A leader it has not heard of yet is no reason to
// refuse: Raft elects at most one leader per term.
func Confirms(term uint64, leader raft.ServerID, req Request) bool {
	return term == req.Term && (leader == "" || leader == req.Leader)
}

// ConnSet is the inbound confirmation connections of a node, closed when
// it shuts down. The zero value is ready to use.
type ConnSet struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

// Add records c, or reports false once CloseAll was called.
func (s *ConnSet) Add(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	s.conns[c] = struct{}{}
	return true
}

// Remove forgets c.
func (s *ConnSet) Remove(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
}

// CloseAll closes every connection recorded and refuses new ones.
func (s *ConnSet) CloseAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
}
