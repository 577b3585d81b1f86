package cluster_test

import (
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/cluster/certs"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// relay listens on loopback and copies every connection to and from
// target, as an attacker's plain TCP relay would; it reports how many
// connections it took.
func relay(t *testing.T, target string) (addr string, conns func() int) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	n := 0
	var open []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range open {
			c.Close()
		}
	})
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			out, err := net.Dial("tcp", target)
			if err != nil {
				in.Close()
				continue
			}
			mu.Lock()
			n++
			open = append(open, in, out)
			mu.Unlock()
			go func() { io.Copy(out, in); out.Close() }()
			go func() { io.Copy(in, out); in.Close() }()
		}
	}()
	return ln.Addr().String(), func() int { mu.Lock(); defer mu.Unlock(); return n }
}

// slotHeld checks that server id is a voter at addr in the leader's
// configuration, and that no server of it sits at the address bad.
func slotHeld(t *testing.T, c *inproc.Cluster, id, addr, bad string) error {
	conf := leaderConfiguration(t, c)
	if got := conf[id]; string(got.Address) != addr || got.Suffrage != raft.Voter {
		return fmt.Errorf("%s is %v at %q in the configuration, want a voter at %s", id, got.Suffrage, got.Address, addr)
	}
	for sid, s := range conf {
		if string(s.Address) == bad {
			return fmt.Errorf("server %s is at the relay's address %s (%v)", sid, bad, s.Suffrage)
		}
	}
	return nil
}

// The relay attack with TLS: one voter is down, and
// a gossip member that holds only the gossip key announces role=server,
// the dead voter's id and, as its Raft address, a plain TCP relay to
// another server's Raft port. The certificate that answers at the relay is
// that other server's, which names another id: the member is never
// admitted, the dead voter's slot never moves to the relay (which would
// make the other server count twice), and the voter comes back at its own
// address when it restarts. Before server certificates named ids, the
// proof passed (a server certificate answered) and the leader moved the
// slot to the relay once the voter had been silent for a few election
// timeouts.
func TestRelayNeverTakesADeadVotersSlotWithTLS(t *testing.T) {
	c, _ := tlsGossipCluster(t, 3, nil)
	l := c.Leader()
	victim, other := (l+1)%3, (l+2)%3
	id, addr := c.Peer(victim).ID, c.Peer(victim).RaftAddr
	c.Stop(victim)
	relayAddr, relayed := relay(t, c.Peer(other).RaftAddr)
	forge(t, "impostor", cluster.MemberMeta{Role: "server", ID: id, RaftAddr: relayAddr, HTTPAddr: nowhere(t), ClusterName: "tenure"}, c.GossipAddr(l))
	seesMembers(t, c, "impostor")
	// The proof dials the relay (so the attack is really tried), and is
	// refused.
	harness.WaitUntil(t, 10*time.Second, "the leader to try the relay", func() bool { return relayed() > 0 })
	harness.Holds(t, 5*time.Second, func() error { return slotHeld(t, c, id, addr, relayAddr) })

	c.Restart(victim)
	harness.WaitFor(t, 20*time.Second, func() error {
		if err := slotHeld(t, c, id, addr, relayAddr); err != nil {
			return err
		}
		if st := c.Node(victim).Status(); st.LeaderID == "" {
			return fmt.Errorf("%s follows no leader", id)
		}
		return nil
	})
	// It is a voter that counts: with the other follower down, the
	// restarted voter and the leader still commit.
	c.Stop(other)
	if err := leaderAcquires(t, c, 20*time.Second, 5*time.Second, "k", time.Minute); err != nil {
		t.Fatalf("acquire with the restarted voter and the leader: %v", err)
	}
}

// Without TLS, a fresh server started with a dead voter's id at another
// address (a recreated pod, or anyone who reaches the gossip and Raft
// ports) comes back as a non-voter at the new address, never as the
// voter: a voter's address never moves on gossip's word. Before, the
// leader moved the voter to the new address as a voter.
func TestReappearingVoterComesBackAsNonVoter(t *testing.T) {
	c := gossipCluster(t, 3, func(cfg *cluster.Config) { cfg.ServerStabilization = time.Hour })
	l := c.Leader()
	victim := (l + 1) % 3
	id := c.Peer(victim).ID
	c.Stop(victim)
	var newAddr string
	joinServer(t, id, c.GossipAddr(l), func(cfg *cluster.Config) {
		cfg.ServerStabilization = time.Hour
		newAddr = cfg.RaftAddr
	})
	harness.WaitFor(t, 20*time.Second, func() error {
		got := leaderConfiguration(t, c)[id]
		if string(got.Address) != newAddr || got.Suffrage != raft.Nonvoter {
			return fmt.Errorf("%s is %v at %s, want a non-voter at %s", id, got.Suffrage, got.Address, newAddr)
		}
		return nil
	})
	harness.Holds(t, 3*time.Second, func() error {
		if got := leaderConfiguration(t, c)[id]; got.Suffrage != raft.Nonvoter {
			return fmt.Errorf("%s became a %v before its stabilization time", id, got.Suffrage)
		}
		return nil
	})
}

// A server whose own certificate names another node id, or none, refuses
// to start, naming the flag: its peers would refuse it anyway.
func TestServerRefusesACertificateOfAnotherID(t *testing.T) {
	p := newPKI(t)
	for _, tc := range []struct {
		name  string
		files certs.Files
		want  string
	}{
		{"another id", p.server("n3", "tenure"), `names node id "n3", but -node-id is "n1"`},
		{"no id", p.client("client-own"), "names no single node id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := inproc.Config("n1", t.TempDir())
			cfg.RaftAddr = harness.FreeAddr(t)
			cfg.GossipAddr = harness.FreeAddr(t)
			cfg.GossipAddr = harness.FreeAddr(t)
			cfg.TLS = tc.files
			n, err := cluster.New(cfg)
			if err == nil {
				n.Shutdown()
				t.Fatal("the server started")
			}
			if !strings.Contains(err.Error(), "tls-cert-file") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error about tls-cert-file that says %q", err, tc.want)
			}
		})
	}
}

// Without TLS, the server says at start that anyone who reaches its
// gossip and Raft ports can join or take a slot.
func TestServerWithoutTLSWarnsAtStart(t *testing.T) {
	logs := &harness.Buffer{}
	cfg := inproc.Config("n1", t.TempDir())
	cfg.RaftAddr = harness.FreeAddr(t)
	cfg.GossipAddr = harness.FreeAddr(t)
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info})
	n, err := cluster.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Shutdown()
	want := "[WARN]  node: raft and gossip run without tls: anyone who reaches the gossip and raft ports can join the cluster or take a server's raft slot"
	if !strings.Contains(logs.String(), want) {
		t.Fatalf("the start log lacks %q:\n%s", want, logs.String())
	}
}

// Raft's own dials check the id too, not only the admission proof: when
// a configuration already names a relay to b's Raft port as voter a (as
// the old leader wrote it), b's dials to "a" meet b's own certificate,
// which names b, and fail, so b never counts twice. Before, b alone, with
// the leader stopped, won an election with two votes (its own, and its
// own again through the relay).
func TestRaftDialsCheckTheID(t *testing.T) {
	c := inproc.Start(t, 3, inproc.Options{TCP: true, Tweak: newServerCerts(t).tweak})
	l := c.Leader()
	a, b := (l+1)%3, (l+2)%3
	c.Stop(a)
	relayAddr, _ := relay(t, c.Peer(b).RaftAddr)
	if err := cluster.RaftOf(c.Node(l)).AddVoter(raft.ServerID(c.Peer(a).ID), raft.ServerAddress(relayAddr), 0, 10*time.Second).Error(); err != nil {
		t.Fatalf("point voter %s at the relay: %v", c.Peer(a).ID, err)
	}
	c.Stop(l)
	// Dozens of election timeouts: without the check it leads within
	// about two seconds, often within half of one.
	harness.Holds(t, 6*time.Second, func() error {
		if st := c.Node(b).Status(); st.Role == "leader" {
			return fmt.Errorf("%s leads alone in term %d: it counted itself twice through the relay", c.Peer(b).ID, st.Term)
		}
		return nil
	})
}
