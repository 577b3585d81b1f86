package cluster_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/cluster/internal/nodeconfig"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// flood opens n silent TCP connections to addr, spread over source
// addresses 127.0.<block>.1…, per at most from each, and closes them when
// the test ends.
func flood(t *testing.T, addr string, n, per int, block byte) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	for i := 0; i < n; i++ {
		d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, block, byte(1+i/per))}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("connection %d to %s: %v", i, addr, err)
		}
		conns = append(conns, c)
	}
	return conns
}

// closedWithin counts the connections that the server closed within d (a
// read ends in EOF or a reset rather than the deadline).
func closedWithin(conns []net.Conn, d time.Duration) int {
	deadline := time.Now().Add(d)
	var mu sync.Mutex
	var wg sync.WaitGroup
	closed := 0
	for _, c := range conns {
		wg.Add(1)
		go func(c net.Conn) {
			defer wg.Done()
			c.SetReadDeadline(deadline)
			_, err := io.Copy(io.Discard, c)
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				mu.Lock()
				closed++
				mu.Unlock()
			}
		}(c)
	}
	wg.Wait()
	return closed
}

// A flood of silent connections on a server's Raft port and on its gossip
// port is bounded on each: past the caps (in all, and per remote address)
// a connection is closed as soon as it is accepted; the ones admitted are
// closed once they have sent nothing for the handshake timeout (Raft) or
// gossip's own stream timeout. Meanwhile the servers, whose addresses
// count only against the cap per address, keep replicating to the flooded
// server.
func TestRaftAndGossipPortsBoundConnections(t *testing.T) {
	limits := cluster.ConnLimits{RaftMaxConns: 40, RaftMaxConnsPerClient: 20,
		GossipMaxConns: 20, GossipMaxConnsPerClient: 10, HandshakeTimeout: 3 * time.Second}
	c := inproc.Start(t, 3, inproc.Options{TCP: true, Gossip: true, Tweak: func(cfg *cluster.Config) {
		cfg.Conns = limits
	}})
	l := c.Leader()
	target := (l + 1) % 3
	raftConns := flood(t, c.Peer(target).RaftAddr, 200, 20, 9)
	gossipConns := flood(t, c.GossipAddr(target), 100, 10, 10)

	// Well before the handshake timeout, every connection past the caps
	// has been closed (the servers' own connections count in the total
	// too), and the others are still open.
	if got, want := closedWithin(raftConns, time.Second), 200-limits.RaftMaxConns; got < want || got == 200 {
		t.Errorf("raft port: %d of 200 silent connections closed at once, want the %d past the caps or a few more, not all", got, want)
	}
	if got, want := closedWithin(gossipConns, time.Second), 100-limits.GossipMaxConns; got < want || got == 100 {
		t.Errorf("gossip port: %d of 100 silent connections closed at once, want the %d past the caps or a few more, not all", got, want)
	}

	// The servers still reach the flooded one: a write commits and it
	// applies it.
	var index uint64
	if err := c.OnLeader(10*time.Second, func(n *cluster.Node) error {
		_, _, err := n.Acquire(harness.Context(t, 5*time.Second), cluster.AcquireRequest{Secret: testSecret, Key: "during-flood", Holder: "h", TTL: time.Minute})
		index = n.Status().CommitIndex
		return err
	}); err != nil {
		t.Fatalf("acquire during the flood: %v", err)
	}
	harness.WaitUntil(t, 10*time.Second, fmt.Sprintf("the flooded server to apply index %d", index), func() bool {
		return c.Node(target).Status().AppliedIndex >= index
	})

	// The admitted ones, silent, are closed after the handshake timeout
	// (Raft) and gossip's stream timeout (10s).
	if got := closedWithin(raftConns, 3*limits.HandshakeTimeout); got != 200 {
		t.Errorf("raft port: %d of 200 silent connections closed after the handshake timeout, want all", got)
	}
	if got := closedWithin(gossipConns, 15*time.Second); got != 100 {
		t.Errorf("gossip port: %d of 100 silent connections closed after gossip's stream timeout, want all", got)
	}
}

// The limits are checked, naming the flag.
func TestConnLimitsValidate(t *testing.T) {
	ok := nodeconfig.DefaultConnLimits()
	for _, tc := range []struct {
		name string
		edit func(*cluster.ConnLimits)
		want string
	}{
		{"defaults", func(*cluster.ConnLimits) {}, ""},
		{"no raft connections", func(l *cluster.ConnLimits) { l.RaftMaxConns = 0 }, "raft-max-conns"},
		{"raft per client above total", func(l *cluster.ConnLimits) { l.RaftMaxConnsPerClient = l.RaftMaxConns + 1 }, "raft-max-conns-per-client"},
		{"gossip per client zero", func(l *cluster.ConnLimits) { l.GossipMaxConnsPerClient = 0 }, "gossip-max-conns-per-client"},
		{"no handshake time", func(l *cluster.ConnLimits) { l.HandshakeTimeout = 0 }, "raft-handshake-timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := ok
			tc.edit(&l)
			err := l.Validate()
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !containsWord(err.Error(), tc.want)) {
				t.Errorf("Validate() = %v, want an error naming %q", err, tc.want)
			}
		})
	}
}

func containsWord(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if s[i:i+len(w)] == w && (i+len(w) == len(s) || s[i+len(w)] == ':') {
			return true
		}
	}
	return false
}

// With TLS, a Raft connection that starts a handshake and never finishes
// it is closed after the handshake timeout, like a silent one; the TLS
// cluster keeps committing.
func TestRaftTLSHandshakeDeadline(t *testing.T) {
	_, c := startProdTLS(t, func(cfg *cluster.Config) { cfg.Conns.HandshakeTimeout = time.Second })
	l := c.Leader()
	target := c.Peer((l + 1) % 3).RaftAddr
	conns := flood(t, target, 4, 4, 11)
	for _, conn := range conns[:2] {
		// The first bytes of a TLS record header, and nothing more.
		if _, err := conn.Write([]byte{0x16, 0x03, 0x01}); err != nil {
			t.Fatal(err)
		}
	}
	if got := closedWithin(conns, 10*time.Second); got != len(conns) {
		t.Errorf("%d of %d connections that never finish a handshake closed, want all", got, len(conns))
	}
	if _, _, err := c.Node(c.Leader()).Acquire(harness.Context(t, 10*time.Second), cluster.AcquireRequest{Secret: testSecret, Key: "k", Holder: "h", TTL: time.Minute}); err != nil {
		t.Fatalf("acquire over Raft on TLS: %v", err)
	}
}
