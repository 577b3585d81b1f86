package cluster

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/hashicorp/raft"
)

// ServeConfirm answers a leader's confirmation requests on conn (the voter's
// side of the leadership check, docs/adr/0002) until conn fails, then
// closes it. conn starts with confirmMagic and confirmVersion. The Raft
// port hands such connections here (transport.New); tests that connect
// nodes in memory call it with one end of a pipe.
func (n *Node) ServeConfirm(conn net.Conn) {
	if !n.inbound.add(conn) {
		conn.Close()
		return
	}
	defer n.inbound.remove(conn)
	defer conn.Close()
	r := bufio.NewReader(conn)
	w := bufio.NewWriter(conn)
	var hello [2]byte
	if _, err := io.ReadFull(r, hello[:]); err != nil {
		return
	}
	if hello[0] == addrMagic {
		n.serveAddr(conn, hello[1])
		return
	}
	if hello[0] != confirmMagic || hello[1] != confirmVersion {
		n.log.Warn("confirmation channel: unknown protocol", "from", conn.RemoteAddr(), "magic", hello[0], "version", hello[1])
		return
	}
	for {
		req, err := readConfirmRequest(r)
		if err != nil {
			if err != io.EOF {
				n.log.Debug("confirmation channel closed", "from", conn.RemoteAddr(), "error", err)
			}
			return
		}
		if err := writeConfirmAnswer(w, n.answerConfirm(req)); err != nil {
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

// answerConfirm is this voter's answer to req, read from Raft now: after
// the request was sent, so after the leader's round began.
func (n *Node) answerConfirm(req confirmRequest) confirmAnswer {
	a := confirmAnswer{Round: req.Round, Voter: raft.ServerID(n.cfg.NodeID)}
	r := n.raftReady.Load() // nil until the cluster-id check has passed
	if r == nil {
		return a
	}
	select {
	case <-n.shutdownCh:
		return a
	default:
	}
	_, leader := r.LeaderWithID()
	a.Term = r.CurrentTerm()
	a.OK = confirms(a.Term, leader, req)
	return a
}

// confirms is the voter's rule: yes only if its current term is the
// request's term (a voter that has voted in a newer term has a newer
// term: it persists the term before it votes) and it knows of no other
// leader in that term. A leader it has not heard of yet is no reason to
// refuse: Raft elects at most one leader per term.
func confirms(term uint64, leader raft.ServerID, req confirmRequest) bool {
	return term == req.Term && (leader == "" || leader == req.Leader)
}

// String is for logs and test failures.
func (a confirmAnswer) String() string {
	return fmt.Sprintf("round %d: %s in term %d says %t", a.Round, a.Voter, a.Term, a.OK)
}

// connSet is the inbound confirmation connections of a node, closed when
// it shuts down.
type connSet struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
}

func (s *connSet) add(c net.Conn) bool {
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

func (s *connSet) remove(c net.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
}

func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
}
