package cluster_test

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// Guarantee (performance, docs/adr/0002): renewals and linearizable reads
// write nothing to the Raft log; their leadership check is a round of
// messages, not a committed entry.
func TestRenewalsAndReadsWriteNothingToTheLog(t *testing.T) {
	for name, tcp := range map[string]bool{"inmem": false, "tcp": true} {
		t.Run(name, func(t *testing.T) {
			c := inproc.Start(t, 3, inproc.Options{TCP: tcp})
			l := acquire(t, c, "k", "h", time.Second)
			leader := c.Node(c.Leader())
			before := cluster.RaftOf(leader).LastIndex()
			for i := 0; i < 50; i++ {
				if _, err := leader.Renew(harness.Context(t, 5*time.Second), l.Key, l.Holder, testSecret, l.Token); err != nil {
					t.Fatalf("renew %d: %v", i, err)
				}
				if _, err := leader.Get(harness.Context(t, 5*time.Second), l.Key, cluster.Linearizable); err != nil {
					t.Fatalf("read %d: %v", i, err)
				}
			}
			if after := cluster.RaftOf(leader).LastIndex(); after != before {
				t.Fatalf("50 renewals and 50 linearizable reads moved the log from index %d to %d", before, after)
			}
		})
	}
}

// confirmRequest writes one request of the confirmation protocol (magic,
// version, then round | term | id length | id) and reads the answer's
// round, term and flag.
func confirmRequest(t *testing.T, conn net.Conn, round, term uint64, leader string) (gotRound, gotTerm uint64, ok bool) {
	t.Helper()
	conn.SetDeadline(time.Now().Add(5 * time.Second))
	w := bufio.NewWriter(conn)
	w.Write([]byte{0xC7, 1})
	var b [18]byte
	binary.BigEndian.PutUint64(b[0:], round)
	binary.BigEndian.PutUint64(b[8:], term)
	binary.BigEndian.PutUint16(b[16:], uint16(len(leader)))
	w.Write(b[:])
	w.WriteString(leader)
	if err := w.Flush(); err != nil {
		t.Fatalf("write request: %v", err)
	}
	var a [17]byte
	if _, err := io.ReadFull(conn, a[:]); err != nil {
		t.Fatalf("read answer: %v", err)
	}
	return binary.BigEndian.Uint64(a[0:]), binary.BigEndian.Uint64(a[8:]), a[16] == 1
}

// Guarantee (safety): a voter that has moved to a newer term (it voted in
// it) refuses to confirm a leader of an older term, and confirms the
// leader of its own term only under that leader's id.
func TestVoterInNewerTermRefusesConfirmation(t *testing.T) {
	c := inproc.Start(t, 3, inproc.Options{})
	old := c.Leader()
	oldTerm := cluster.RaftOf(c.Node(old)).CurrentTerm()
	voter := (old + 1) % 3
	// Moving leadership elects a leader in a newer term; every voter
	// that voted for it is in that term.
	if _, err := c.Node(old).TransferLeadership(harness.Context(t, 5*time.Second), c.Peer(voter).ID); err != nil {
		t.Fatalf("transfer: %v", err)
	}
	now := c.Leader(old)
	newTerm := cluster.RaftOf(c.Node(now)).CurrentTerm()
	if newTerm <= oldTerm {
		t.Fatalf("term %d after the transfer, was %d", newTerm, oldTerm)
	}
	harness.WaitUntil(t, 5*time.Second, "every voter in the new term", func() bool {
		for i := 0; i < 3; i++ {
			if cluster.RaftOf(c.Node(i)).CurrentTerm() != newTerm {
				return false
			}
		}
		return true
	})
	for i := 0; i < 3; i++ {
		if i == now {
			continue
		}
		for _, tc := range []struct {
			term   uint64
			leader string
			want   bool
		}{
			{oldTerm, c.Peer(old).ID, false},     // the deposed leader
			{newTerm, c.Peer(now).ID, true},      // the leader of the voter's term
			{newTerm, "someone-else", false},     // another leader in that term
			{newTerm + 1, c.Peer(now).ID, false}, // a term the voter is not in
		} {
			a, b := net.Pipe()
			go c.Node(i).ServeConfirm(b)
			round, term, ok := confirmRequest(t, a, 7, tc.term, tc.leader)
			a.Close()
			if round != 7 || term != newTerm || ok != tc.want {
				t.Errorf("%s asked for term %d by %s: answered round %d, term %d, yes=%t; want round 7, term %d, yes=%t",
					c.Peer(i).ID, tc.term, tc.leader, round, term, ok, newTerm, tc.want)
			}
		}
	}
}
