package cluster_test

import (
	"crypto/tls"
	"errors"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/cluster/certs"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// tlsGossipCluster starts n servers with gossip and mutual TLS, each with
// a certificate of its own id, tweaked further by tweak if not nil.
// It returns each server's certificate files by id too.
func tlsGossipCluster(t *testing.T, n int, tweak func(*cluster.Config)) (*inproc.Cluster, map[string]certs.Files) {
	t.Helper()
	sc := newServerCerts(t)
	c := gossipCluster(t, n, func(cfg *cluster.Config) {
		sc.tweak(cfg)
		if tweak != nil {
			tweak(cfg)
		}
	})
	return c, sc.byID()
}

// leaderAndVictim names the leader of c and the server after it, the
// victim of a relay: their indexes, and the victim's id and Raft address.
func leaderAndVictim(c *inproc.Cluster) (l, victim int, id, addr string) {
	l = c.Leader()
	victim = (l + 1) % c.Len()
	return l, victim, c.Peer(victim).ID, c.Peer(victim).RaftAddr
}

// serverCerts gives each server a certificate of its own id from a PKI of
// its own, the same one when the server restarts.
type serverCerts struct {
	p     *pki
	mu    sync.Mutex
	files map[string]certs.Files
}

func newServerCerts(t *testing.T) *serverCerts {
	t.Helper()
	return &serverCerts{p: newPKI(t), files: map[string]certs.Files{}}
}

// tweak sets cfg.TLS to the certificate of cfg.NodeID: an
// inproc.Options.Tweak.
func (s *serverCerts) tweak(cfg *cluster.Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.files[cfg.NodeID]; !ok {
		s.files[cfg.NodeID] = s.p.server(cfg.NodeID, cfg.ClusterName)
	}
	cfg.TLS = s.files[cfg.NodeID]
}

// byID is each server's certificate files by id.
func (s *serverCerts) byID() map[string]certs.Files {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.files)
}

// handshakeOnly listens with TLS at addr ("127.0.0.1:0" for any port) as
// the server of files: it completes each handshake, then hangs up, and
// speaks no Raft. It returns the address it listens at.
func handshakeOnly(t *testing.T, addr string, files certs.Files) string {
	t.Helper()
	cfg, err := certs.ServerConfig(files)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", addr, cfg)
	if err != nil {
		t.Fatalf("listen at %s: %v", addr, err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.(*tls.Conn).Handshake()
			conn.Close()
		}
	}()
	return ln.Addr().String()
}

// With TLS, a member that holds only the gossip key announces a live
// voter's id with, as its Raft address, a plain TCP relay to that same
// voter's Raft port. The admission check dials the relay and is answered
// by the voter's own certificate: it passes, for as long as the voter
// lives. Then the voter goes down (a crash, a restart of a rolling
// upgrade): the leader proves the member again before it would move the
// slot, the relay answers nothing now, and the voter keeps its slot at its
// own address; it comes back there and counts for the quorum. Before, the
// leader acted on the verdict it had kept since the first check, demoted
// the voter and re-added it as a non-voter at the relay's address, and the
// cluster ran on two voters of three with the third's Raft traffic through
// the relay.
func TestRelayToALiveVoterNeverTakesItsSlot(t *testing.T) {
	c, _ := tlsGossipCluster(t, 3, nil)
	l, victim, id, addr := leaderAndVictim(c)
	relayAddr := relayImpostor(t, c, l, id, addr)
	c.Stop(victim)
	// Well past the 5 election timeouts after which a silent voter moves.
	harness.Holds(t, 8*time.Second, func() error { return slotHeld(t, c, id, addr, relayAddr) })

	c.Restart(victim)
	harness.WaitFor(t, 20*time.Second, func() error {
		if err := slotHeld(t, c, id, addr, relayAddr); err != nil {
			return err
		}
		if c.Node(victim).Status().LeaderID == "" {
			return fmt.Errorf("%s follows no leader", id)
		}
		return nil
	})
	// Two real servers of three are up, the leader and the restarted
	// voter: they commit.
	other := (l + 2) % 3
	c.Stop(other)
	if err := leaderAcquires(t, c, 15*time.Second, 5*time.Second, "k", time.Minute); err != nil {
		t.Fatalf("with %s and the leader up, %s stopped: acquire: %v", id, c.Peer(other).ID, err)
	}
}

// A server demoted to non-voter at its own address (a move that was cut
// short, an operator's demotion) is promoted back once it is caught up,
// even while a forged member announces its id elsewhere (here a relay to
// it): its address is the configuration's, which the leader reaches and
// proves again, not the forged member's. Before, any second member
// announcing the id blocked the promotion, so anyone holding the gossip
// key kept the cluster one voter short for as long as they liked.
func TestVoterAtItsAddressIsPromotedBackDespiteADuplicate(t *testing.T) {
	c, _ := tlsGossipCluster(t, 3, func(cfg *cluster.Config) { cfg.ServerStabilization = time.Second })
	l, _, id, addr := leaderAndVictim(c)
	relayAddr := relayImpostor(t, c, l, id, addr)
	if err := cluster.RaftOf(c.Node(l)).DemoteVoter(raft.ServerID(id), 0, 10*time.Second).Error(); err != nil {
		t.Fatalf("demote %s: %v", id, err)
	}
	harness.WaitFor(t, 20*time.Second, func() error { return slotHeld(t, c, id, addr, relayAddr) })
}

// A voter that restarts at its own address answers a handshake there with
// its certificate before the leader's Raft messages, backed off while it
// was down, reach it again, and before its gossip announcement does. A
// member that announced its id at a relay to that address all along is
// alone on gossip then, and proves through the relay; the voter still
// stays where it answers. Here the restarted voter is stood for by a
// listener with its certificate that speaks no Raft, so the window stays
// open. Before, the leader demoted the voter and moved it to the relay.
func TestVoterThatAnswersAtItsAddressIsNeverMoved(t *testing.T) {
	c, files := tlsGossipCluster(t, 3, nil)
	l, victim, id, addr := leaderAndVictim(c)
	c.Stop(victim)
	handshakeOnly(t, addr, files[id])
	relayAddr := relayImpostor(t, c, l, id, addr)
	// Well past the 5 election timeouts after which a silent voter moves.
	harness.Holds(t, 8*time.Second, func() error { return slotHeld(t, c, id, addr, relayAddr) })
}

// An operator's readmit proves the member again: a member that announced
// a removed server's id at a relay to that server proved itself while the
// server lived, but once the server is down the readmit is refused
// (not_found), and no server is added at the relay's address. Before, the
// readmit trusted the verdict kept since the first check and added the
// server back as a non-voter at the relay.
func TestReadmitProvesTheMemberAgain(t *testing.T) {
	c, _ := tlsGossipCluster(t, 3, nil)
	l, victim, id, addr := leaderAndVictim(c)
	relayImpostor(t, c, l, id, addr)
	c.Stop(victim)
	leader := c.Node(l)
	if _, err := leader.RemoveServer(harness.Context(t, 5*time.Second), id, true); err != nil {
		t.Fatalf("remove %s: %v", id, err)
	}
	harness.WaitFor(t, 10*time.Second, func() error {
		for _, m := range leader.Members() {
			if m.Meta.ID == id && m.Name != "impostor" && m.Status == "alive" {
				return fmt.Errorf("the leader still sees %s alive on gossip", id)
			}
		}
		return nil
	})
	srv, err := leader.ReadmitServer(harness.Context(t, 5*time.Second), id)
	if !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("readmit %s with only the relay announcing it: got %+v, %v; want %v", id, srv, err, cluster.ErrNotFound)
	}
	if got, ok := leaderConfiguration(t, c)[id]; ok {
		t.Errorf("%s is %v at %s in the configuration, want it out", id, got.Suffrage, got.Address)
	}
}

// relayImpostor has a forged member, impostor, announce server id with a
// relay to addr as its Raft address, and waits until the leader l has
// proved it through the relay. It returns the relay's address.
func relayImpostor(t *testing.T, c *inproc.Cluster, l int, id, addr string) string {
	t.Helper()
	relayAddr, relayed := relay(t, addr)
	forge(t, "impostor", cluster.MemberMeta{Role: "server", ID: id, RaftAddr: relayAddr, HTTPAddr: nowhere(t), ClusterName: "tenure"}, c.GossipAddr(l))
	seesMembers(t, c, "impostor")
	harness.WaitUntil(t, 10*time.Second, "the leader to prove the impostor through the relay", func() bool { return relayed() > 0 })
	return relayAddr
}
