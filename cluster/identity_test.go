package cluster_test

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/cluster/internal/certs"
	"github.com/tenure-io/tenure/cluster/internal/identity"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

func TestIdentityUnreadableRefused(t *testing.T) {
	for name, content := range map[string]string{"garbage": "{not json", "no node id": `{"cluster_id":"c-1"}`} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, identity.File), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			_, _, err := cluster.ReadIdentity(dir)
			if !errors.Is(err, cluster.ErrRefusedStart) || !strings.Contains(err.Error(), identity.File) {
				t.Fatalf("ReadIdentity = %v, want ErrRefusedStart naming %s", err, identity.File)
			}
		})
	}
}

// singleNode starts a one-server cluster n1 on dir (in-memory transport).
func singleNode(t *testing.T, dir string, tweak func(*cluster.Config)) (*cluster.Node, error) {
	t.Helper()
	cfg := inproc.Config("n1", dir)
	_, tr := raft.NewInmemTransport("n1")
	cfg.Transport = tr
	cfg.InitialCluster = []cluster.Peer{{ID: "n1", RaftAddr: "n1", HTTPAddr: "127.0.0.1:1"}}
	if tweak != nil {
		tweak(&cfg)
	}
	n, err := cluster.New(cfg)
	if err == nil {
		t.Cleanup(func() { n.Shutdown() })
	}
	return n, err
}

// runOnce runs n1 on dir until its identity file records the cluster id
// the first leader gave, and stops it; it returns the identity.
func runOnce(t *testing.T, dir string) cluster.Identity {
	t.Helper()
	n, err := singleNode(t, dir, nil)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	var id cluster.Identity
	harness.WaitUntil(t, 10*time.Second, "the cluster id in the identity file", func() bool {
		id, _, _ = cluster.ReadIdentity(dir)
		return id.ClusterID != "" && id.ClusterID == n.Status().ClusterID
	})
	if id.NodeID != "n1" {
		t.Fatalf("identity file names node %q, want n1", id.NodeID)
	}
	n.Shutdown()
	return id
}

func wantRefused(t *testing.T, err error, parts ...string) {
	t.Helper()
	if !errors.Is(err, cluster.ErrRefusedStart) {
		t.Fatalf("New = %v, want ErrRefusedStart", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not mention %q", err, p)
		}
	}
}

func TestStartRefusesAnotherServersDataDir(t *testing.T) {
	dir := t.TempDir()
	runOnce(t, dir)
	_, err := singleNode(t, dir, func(c *cluster.Config) { c.NodeID = "n2" })
	wantRefused(t, err, "belongs to server n1", "not to n2", "-node-id n1")
}

func TestStartRefusesLostRaftState(t *testing.T) {
	dir := t.TempDir()
	id := runOnce(t, dir)
	if err := os.Remove(filepath.Join(dir, "raft.db")); err != nil {
		t.Fatal(err)
	}
	_, err := singleNode(t, dir, nil)
	wantRefused(t, err, id.ClusterID, "remove-server -force n1", "-allow-lost-raft-state")
	// Refused again: a refusal changes nothing in the data dir.
	_, err = singleNode(t, dir, nil)
	wantRefused(t, err, id.ClusterID)

	// The operator's flag starts it as a new server.
	n, err := singleNode(t, dir, func(c *cluster.Config) { c.AllowLostRaftState = true })
	if err != nil {
		t.Fatalf("start with AllowLostRaftState: %v", err)
	}
	n.Shutdown()
}

func TestStartRefusesStateOfAnotherCluster(t *testing.T) {
	dir := t.TempDir()
	id := runOnce(t, dir)
	id.ClusterID = "other-cluster"
	if err := identity.Write(dir, id); err != nil {
		t.Fatal(err)
	}
	_, err := singleNode(t, dir, nil)
	wantRefused(t, err, "other-cluster", "belongs to cluster")
}

func TestStartRefusesZeroedRaftDB(t *testing.T) {
	dir := t.TempDir()
	runOnce(t, dir)
	path := filepath.Join(dir, "raft.db")
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, info.Size()), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = singleNode(t, dir, nil)
	wantRefused(t, err, path, "damaged", "remove-server -force n1")
}

// A data dir written by a build without identity files (raft.db, no
// node-identity.json) is claimed at start and keeps working.
func TestStartClaimsDataDirWithoutIdentity(t *testing.T) {
	dir := t.TempDir()
	runOnce(t, dir)
	if err := os.Remove(filepath.Join(dir, identity.File)); err != nil {
		t.Fatal(err)
	}
	id := runOnce(t, dir)
	b, _ := json.Marshal(id)
	if id.NodeID != "n1" || id.ClusterID == "" {
		t.Fatalf("identity after restart = %s", b)
	}
}

// runWithSnapshot runs n1 on dir as runOnce does, with a snapshot taken
// before it stops; it returns the snapshot's state file.
func runWithSnapshot(t *testing.T, dir string) string {
	t.Helper()
	runOnce(t, dir)
	n, err := singleNode(t, dir, nil)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	harness.WaitUntil(t, 10*time.Second, "a leader", func() bool { return n.Status().Ready })
	if _, err := n.Snapshot(harness.Context(t, 10*time.Second)); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	n.Shutdown()
	states, _ := filepath.Glob(filepath.Join(dir, "snapshots", "*", "state.bin"))
	if len(states) != 1 {
		t.Fatalf("snapshots: %v, want one", states)
	}
	return states[0]
}

// Snapshots left behind do not hide a lost raft.db: the term and vote are
// in raft.db alone.
func TestStartRefusesLostRaftStateWithSnapshotsLeft(t *testing.T) {
	dir := t.TempDir()
	runWithSnapshot(t, dir)
	if err := os.Remove(filepath.Join(dir, "raft.db")); err != nil {
		t.Fatal(err)
	}
	_, err := singleNode(t, dir, nil)
	wantRefused(t, err, "has been a member of cluster", "-allow-lost-raft-state")
}

func TestStartRefusesDamagedSnapshot(t *testing.T) {
	dir := t.TempDir()
	state := runWithSnapshot(t, dir)
	b, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(state, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = singleNode(t, dir, nil)
	wantRefused(t, err, filepath.Join(dir, "snapshots")+" is damaged", "remove-server -force n1")
}

// A second server on a data dir in use is refused, naming the lock, rather
// than waiting for ever on it.
func TestStartRefusesDataDirInUse(t *testing.T) {
	dir := t.TempDir()
	runOnce(t, dir)
	if _, err := singleNode(t, dir, nil); err != nil {
		t.Fatalf("first start: %v", err)
	}
	_, err := singleNode(t, dir, nil)
	wantRefused(t, err, "raft.db is locked by another process")
}

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
		mu.Lock()
		defer mu.Unlock()
		for _, c := range open {
			c.Close()
		}
	})
	harness.AcceptEach(t, ln, func(in net.Conn) {
		out, err := net.Dial("tcp", target)
		if err != nil {
			in.Close()
			return
		}
		mu.Lock()
		n++
		open = append(open, in, out)
		mu.Unlock()
		go func() { io.Copy(out, in); out.Close() }()
		go func() { io.Copy(in, out); in.Close() }()
	})
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
	harness.AcceptEach(t, ln, func(conn net.Conn) {
		conn.(*tls.Conn).Handshake()
		conn.Close()
	})
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
