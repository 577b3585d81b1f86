package cluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/connlimit"
	"github.com/tenure-io/tenure/cluster/internal/transport"
)

// MemberMeta is what a member announces over gossip (JSON, at most
// memberlist.MetaMaxSize bytes). Servers fill the server fields; workers,
// through package client, the worker ones. The contract is client's
// MemberMeta: this copy exists only because cluster must not import client,
// and httpapi converts one into the other, which stops compiling the day
// the two declare different fields.
type MemberMeta struct {
	Role string `json:"role"` // "server" or "worker"
	ID   string `json:"id"`
	// Servers.
	RaftAddr        string `json:"raft,omitempty"`
	HTTPAddr        string `json:"http,omitempty"`
	BootstrapExpect int    `json:"expect,omitempty"`
	NonVoter        bool   `json:"nonvoter,omitempty"`
	// Bootstrapped: the server has Raft state (it must not bootstrap again).
	Bootstrapped bool `json:"bootstrapped,omitempty"`
	// ClusterName is the server's -cluster-name: the leader admits only
	// servers of its own cluster to Raft (Config.ProveServer).
	ClusterName string `json:"cluster,omitempty"`
	// Workers. Holder is the holder of the worker's leases (unique per
	// process; several processes may share an ID).
	Holder   string   `json:"holder,omitempty"`
	Groups   []string `json:"groups,omitempty"`
	Capacity int      `json:"capacity,omitempty"`
	Draining bool     `json:"draining,omitempty"`
	// Keys are the fingerprints of the member's gossip keys, primary
	// first; empty without gossip encryption.
	Keys []string `json:"keys,omitempty"`
}

// Member is one gossip member as this node sees it.
type Member struct {
	Name   string
	Addr   string
	Status string // alive, or dead (failed or left) for deadMemberTTL
	Meta   MemberMeta

	// proof is the verdict of the admission check on this announcement
	// (errUnchecked until the maintain goroutine has run it).
	proof error
}

// errUnchecked: the admission check has not run yet on a member's latest
// announcement.
var errUnchecked = errors.New("not checked yet")

// gossip runs memberlist for a server: it announces the server's addresses,
// joins the configured peers (retrying until one answers), bootstraps Raft
// once BootstrapExpect servers of its cluster are seen, and, on the leader,
// admits servers that join as non-voters, promotes them and removes dead
// servers (autopilot.go).
type gossip struct {
	gossipConfig
	list   *memberlist.Memberlist
	events chan struct{}
	stop   chan struct{}
	wg     sync.WaitGroup

	mu   sync.Mutex
	meta MemberMeta
	// members is this node's view of the membership, kept from
	// memberlist's events (which run under memberlist's lock), so that
	// reading it never races with memberlist's own updates, and so that
	// dead members stay listed for a while.
	members map[string]*memberEntry
	// removed holds the servers an operator removed through this node, by
	// time (see removedLately).
	removed map[string]time.Time
	// keyringMu orders keyring changes (keyring.go).
	keyringMu sync.Mutex
	// gen numbers the announcements recorded (memberEntry.gen).
	gen uint64

	// gate counts the inbound stream connections.
	gate *connlimit.Gate

	// pilot is the leader's memory for admission, promotion and cleanup;
	// only the maintain goroutine touches it.
	pilot pilot
	// sharedIDs is what warnSharedIDs last logged; only the maintain
	// goroutine touches it.
	sharedIDs string
}

// gossipConfig is what gossip needs from its node, and nothing more.
type gossipConfig struct {
	addr string   // host:port to bind and advertise
	join []string // peers to join
	self MemberMeta
	log  hclog.Logger
	raft raftMembership
	// leading reports whether this node is the established leader: only
	// then does gossip change the Raft configuration.
	leading func() bool
	// changed is signalled, without blocking, on every membership change;
	// observed is called on it and on every verdict of proveMembers (the
	// HTTP addresses that Status names follow both).
	changed  chan<- struct{}
	observed func()
	// keyring encrypts gossip; nil runs gossip in plain text. It is saved
	// in dataDir on every change (keyring.go).
	keyring *memberlist.Keyring
	dataDir string
	// prove is the admission check of a member that announces itself as
	// a server (Config.ProveServer): nil when it belongs to this cluster.
	prove func(Member) error
	// answersAt checks that server id answers at Raft address addr now,
	// with a certificate that names id; nil without TLS, where nothing
	// can prove an id.
	answersAt func(id, addr string) error
	// contact is this node's last answered Raft message to a server at
	// an address (contacts.get): the leader's proof that a server lives.
	contact func(raft.ServerID, raft.ServerAddress) (contact, bool)
	// rules says when to promote, move and remove servers.
	rules pilotRules
	// limits caps the inbound stream connections (GossipMaxConns…);
	// trusted tells the addresses of the cluster's servers.
	limits  ConnLimits
	trusted func(ip string) bool
	// logSuppressed, if not nil, is called for every memberlist log line
	// left out (memberlistLogger).
	logSuppressed func()
}

// raftMembership is the part of *raft.Raft that gossip drives.
type raftMembership interface {
	BootstrapCluster(raft.Configuration) raft.Future
	LastIndex() uint64
	CommitIndex() uint64
	CurrentTerm() uint64
	GetConfiguration() raft.ConfigurationFuture
	AddVoter(raft.ServerID, raft.ServerAddress, uint64, time.Duration) raft.IndexFuture
	AddNonvoter(raft.ServerID, raft.ServerAddress, uint64, time.Duration) raft.IndexFuture
	DemoteVoter(raft.ServerID, uint64, time.Duration) raft.IndexFuture
	RemoveServer(raft.ServerID, uint64, time.Duration) raft.IndexFuture
}

// memberEntry is one member as last announced.
type memberEntry struct {
	member Member
	since  time.Time // of the last change of status
	// gen numbers the announcement; proofGen is the one member.proof
	// judged.
	gen, proofGen uint64
}

// deadMemberTTL is how long a dead or departed member stays listed.
const deadMemberTTL = 10 * time.Minute

func newGossip(cfg gossipConfig) (*gossip, error) {
	host, portStr, err := net.SplitHostPort(cfg.addr)
	if err != nil {
		return nil, fmt.Errorf("gossip-addr: %w", err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("gossip-addr: port %q: %w", portStr, err)
	}
	g := &gossip{
		gossipConfig: cfg,
		events:       make(chan struct{}, 1),
		stop:         make(chan struct{}),
		members:      make(map[string]*memberEntry),
		removed:      make(map[string]time.Time),
		meta:         cfg.self,
		pilot:        newPilot(),
	}
	mc := memberlist.DefaultLANConfig()
	// No LZW of every gossip packet: it was most of gossip's CPU (a
	// compressor's tables allocated per packet), more than halving it
	// let 500 members converge on two cores (test/bench/results/
	// 2026-11-24-scale.md). Compressed packets of older members are still
	// read. Workers do the same (client/worker_gossip.go).
	mc.EnableCompression = false
	// A server that comes back under its id at another address (a
	// recreated pod or container) takes its name over at once when it
	// left gracefully (shutdown leaves), and 5s after it was declared dead
	// when it crashed, instead of only once the dead member is forgotten
	// (30s more). Moving it in the Raft configuration still waits for the
	// leader's own rules (autopilot.go: proof, and silence at the old
	// address).
	mc.DeadNodeReclaimTime = 5 * time.Second
	if cfg.keyring != nil {
		mc.Keyring = cfg.keyring
		mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
		g.meta.Keys = keyFingerprints(cfg.keyring)
	}
	mc.Name = cfg.self.ID
	mc.BindAddr, mc.BindPort = host, port
	mc.AdvertiseAddr, mc.AdvertisePort = host, port
	mc.Delegate = g
	mc.Events = g
	// Within a limit per kind of line: a stranger's packets cannot flood
	// the log.
	mc.Logger = memberlistLogger(g.log, cfg.logSuppressed)
	if cfg.limits == (ConnLimits{}) {
		cfg.limits = DefaultConnLimits()
	}
	gate := connlimit.New(cfg.limits.gossip(cfg.trusted))
	tr, err := transport.NewGossipTransport(host, port, gate, mc)
	if err != nil {
		return nil, err
	}
	if port == 0 {
		mc.BindPort, mc.AdvertisePort = tr.GetAutoBindPort(), tr.GetAutoBindPort()
	}
	mc.Transport, g.gate = tr, gate
	g.list, err = memberlist.Create(mc)
	if err != nil {
		tr.Shutdown()
		return nil, fmt.Errorf("start gossip on %s: %w", cfg.addr, err)
	}
	g.wg.Add(2)
	go g.joinLoop(cfg.join)
	go g.maintain()
	return g, nil
}

// shutdown leaves the gossip pool, so that the others mark this member
// left at once (a recreated server at a new address may take its name
// over), and stops.
func (g *gossip) shutdown() {
	close(g.stop)
	g.wg.Wait()
	if err := g.list.Leave(time.Second); err != nil {
		g.log.Debug("leaving gossip failed", "error", err)
	}
	g.list.Shutdown()
}

// joinLoop joins the configured peers, retrying every few seconds until
// one answers (a peer may start later than this node), and afterwards
// joins again whenever no other server is alive in its view, so that a
// node cut off long enough for its peers to be declared dead (or whose
// peers all restarted) finds them again. It ends at shutdown.
func (g *gossip) joinLoop(peers []string) {
	defer g.wg.Done()
	if len(peers) == 0 {
		return
	}
	joined := false
	for {
		if !joined || !g.seesOtherServers() {
			n, err := g.list.Join(peers)
			if n > 0 {
				if !joined {
					g.log.Info("joined", "peers", n)
				} else {
					g.log.Info("rejoined", "peers", n)
				}
				joined = true
			} else {
				g.log.Debug("join failed, retrying", "error", err)
			}
		}
		select {
		case <-g.stop:
			return
		case <-time.After(2 * time.Second):
		}
	}
}

// seesOtherServers reports whether another server of this cluster is alive
// in this node's gossip view.
func (g *gossip) seesOtherServers() bool {
	for _, m := range g.Members() {
		if m.Meta.Role == "server" && m.Meta.ID != g.self.ID && m.Status == "alive" && m.proof == nil {
			return true
		}
	}
	return false
}

// maintain bootstraps when enough servers are seen and, while this node
// leads, reconciles the Raft configuration with gossip (autopilot.go). It
// runs on every membership event and every second.
func (g *gossip) maintain() {
	defer g.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-g.stop:
			return
		case <-g.events:
		case <-tick.C:
		}
		g.proveMembers()
		g.warnSharedIDs()
		g.maybeBootstrap()
		g.markMember()
		if g.leading() {
			g.reconcile()
		}
	}
}

func (g *gossip) maybeBootstrap() {
	g.mu.Lock()
	meta := g.meta
	g.mu.Unlock()
	expect := g.self.BootstrapExpect
	if expect == 0 || meta.Bootstrapped {
		return
	}
	var servers []raft.Server
	members := g.Members()
	shared := announcedTwice(members)
	for _, m := range members {
		if m.Meta.Role != "server" || m.Status != "alive" {
			continue
		}
		if shared[m.Meta.ID] > 1 {
			g.logOnce(m.Name, "not bootstrapping with this member", fmt.Errorf(
				"%d alive gossip members announce server id %s: none of them is trusted", shared[m.Meta.ID], m.Meta.ID))
			return
		}
		if m.proof != nil {
			if m.proof != errUnchecked {
				g.logOnce(m.Name, "not bootstrapping with this member", m.proof)
			}
			continue
		}
		if m.Meta.Bootstrapped {
			return // a cluster exists: wait to be added to it
		}
		if m.Meta.BootstrapExpect == 0 || m.Meta.NonVoter {
			continue
		}
		if m.Meta.BootstrapExpect != expect {
			g.log.Error("peer expects a different cluster size; not bootstrapping", "peer", m.Name, "peer_expect", m.Meta.BootstrapExpect, "expect", expect)
			return
		}
		servers = append(servers, raft.Server{ID: raft.ServerID(m.Meta.ID), Address: raft.ServerAddress(m.Meta.RaftAddr)})
	}
	if len(servers) < expect {
		return
	}
	sort.Slice(servers, func(i, j int) bool { return servers[i].ID < servers[j].ID })
	err := g.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error()
	if err != nil && err != raft.ErrCantBootstrap {
		g.log.Error("bootstrap failed", "error", err)
		return
	}
	g.log.Info("bootstrapped raft", "servers", len(servers))
	g.mu.Lock()
	g.meta.Bootstrapped = true
	g.mu.Unlock()
	if err := g.list.UpdateNode(5 * time.Second); err != nil {
		g.log.Warn("announce bootstrap failed", "error", err)
	}
}

// markMember announces, once this server has Raft state (it bootstrapped,
// or a leader added it and replicated to it), that it is no longer new.
func (g *gossip) markMember() {
	g.mu.Lock()
	done := g.meta.Bootstrapped
	g.mu.Unlock()
	if done || g.raft.LastIndex() == 0 {
		return
	}
	g.mu.Lock()
	g.meta.Bootstrapped = true
	g.mu.Unlock()
	if err := g.list.UpdateNode(5 * time.Second); err != nil {
		g.log.Warn("announce membership failed", "error", err)
	}
}

// Members lists the gossip members with their decoded metadata, sorted by
// name: the live ones, and the dead or departed ones of the last
// deadMemberTTL.
func (g *gossip) Members() []Member {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]Member, 0, len(g.members))
	for name, e := range g.members {
		if e.member.Status != "alive" && time.Since(e.since) > deadMemberTTL {
			delete(g.members, name)
			continue
		}
		out = append(out, e.member)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// record updates the table from an event about node. memberlist calls the
// event delegate with its node lock held, so node's fields are stable here.
// The status comes from the event: memberlist does not update the State of
// the Node it hands out.
func (g *gossip) record(node *memberlist.Node, status string) {
	m := Member{Name: node.Name, Addr: node.Address(), Status: status, proof: errUnchecked}
	if err := json.Unmarshal(node.Meta, &m.Meta); err != nil {
		m.Meta = MemberMeta{Role: "unknown", ID: node.Name}
	}
	g.mu.Lock()
	e := g.members[node.Name]
	if e != nil && e.member.proof == nil && e.member.Meta.ID == m.Meta.ID && e.member.Meta.RaftAddr == m.Meta.RaftAddr &&
		e.member.Meta.ClusterName == m.Meta.ClusterName && e.member.Meta.Role == m.Meta.Role {
		// A proven server announcing other metadata (its keys, say): the
		// proof still holds, and forwarding to it must not stop until it
		// is proven again. A refusal is not kept: it is checked anew.
		m.proof = nil
	}
	if e == nil || e.member.Status != m.Status {
		e = &memberEntry{since: time.Now()}
		g.members[node.Name] = e
	}
	e.member = m
	g.gen++
	e.gen = g.gen
	g.mu.Unlock()
	g.kick()
}

// proveMembers runs the admission check on every server announcement that
// it has not judged yet, outside the lock, so that a check may take time
// (a certificate check may dial the member); readers see the verdicts in
// Member.proof. It runs on the maintain goroutine before each round.
func (g *gossip) proveMembers() {
	type todo struct {
		name string
		gen  uint64
		m    Member
	}
	var list []todo
	g.mu.Lock()
	for name, e := range g.members {
		if e.proofGen != e.gen && e.member.Meta.Role == "server" {
			list = append(list, todo{name, e.gen, e.member})
		}
	}
	g.mu.Unlock()
	for _, t := range list {
		err := g.prove(t.m)
		g.mu.Lock()
		if e := g.members[t.name]; e != nil && e.gen == t.gen {
			e.member.proof, e.proofGen = err, t.gen
		}
		g.mu.Unlock()
	}
	if len(list) > 0 && g.observed != nil {
		g.observed()
	}
}

// proveAgain runs the admission check on m now, on the caller's
// goroutine, for a step that changes the Raft configuration on m's word:
// admitting it, moving or demoting a voter for it, readmitting it,
// promoting it. The verdict that proveMembers keeps (Member.proof) says
// only that m proved itself once, and a Raft address that relays to a
// live server proves only while that server lives; so the leader never
// acts on it, and it serves display and filtering only. A refusal
// replaces the kept verdict, and proveMembers checks m anew next round.
// It takes at most the check's own timeout (TLSProof: proofTimeout).
func (g *gossip) proveAgain(m Member) error {
	err := g.prove(m)
	if err == nil {
		return nil
	}
	g.mu.Lock()
	e := g.members[m.Name]
	same := e != nil && e.member.Meta.ID == m.Meta.ID && e.member.Meta.RaftAddr == m.Meta.RaftAddr
	if same {
		e.member.proof, e.proofGen = err, 0
	}
	g.mu.Unlock()
	if same && g.observed != nil {
		g.observed()
	}
	return err
}

// warnSharedIDs logs, once per change, the server ids that more than one
// alive gossip member announces: a member announcing a real server's id is
// forged (or a server runs twice), and none of them is trusted for
// anything that needs an address (autopilot.go, ReadmitServer). Server
// addresses never come from gossip anyway (leader_addr.go).
func (g *gossip) warnSharedIDs() {
	var shared []string
	for id, k := range announcedTwice(g.Members()) {
		if k > 1 {
			shared = append(shared, fmt.Sprintf("%s (%d members)", id, k))
		}
	}
	sort.Strings(shared)
	s := strings.Join(shared, ", ")
	if s == g.sharedIDs {
		return
	}
	g.sharedIDs = s
	if s != "" {
		g.log.Warn("several gossip members announce one server id: none of them is trusted", "server_ids", s)
	} else {
		g.log.Info("no server id is announced by several gossip members any more")
	}
}

// httpAddrOf is the HTTP address of server id, as the first alive member
// that proves it belongs to this cluster announces it. Only the negative
// control of the fault suite (tenure_unsafe_identity) forwards there: any
// member that passes the proof can claim any id (docs/adr/0026).
func (g *gossip) httpAddrOf(id string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, e := range g.members {
		if m := e.member; m.Meta.Role == "server" && m.Meta.ID == id && m.Status == "alive" && m.proof == nil {
			return m.Meta.HTTPAddr
		}
	}
	return ""
}

// NodeMeta implements memberlist.Delegate.
func (g *gossip) NodeMeta(limit int) []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, err := json.Marshal(g.meta)
	if err != nil || len(b) > limit {
		g.log.Error("member metadata too large", "bytes", len(b), "limit", limit)
		return nil
	}
	return b
}

// The rest of memberlist.Delegate: servers gossip nothing but metadata.
func (g *gossip) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (g *gossip) LocalState(join bool) []byte                { return nil }
func (g *gossip) MergeRemoteState(buf []byte, join bool)     {}

// memberlist.EventDelegate: keep the table, and wake maintain.
func (g *gossip) NotifyJoin(n *memberlist.Node)   { g.record(n, "alive") }
func (g *gossip) NotifyLeave(n *memberlist.Node)  { g.record(n, "dead") }
func (g *gossip) NotifyUpdate(n *memberlist.Node) { g.record(n, "alive") }

func (g *gossip) kick() {
	select {
	case g.events <- struct{}{}:
	default:
	}
	select {
	case g.changed <- struct{}{}:
	default:
	}
	if g.observed != nil {
		g.observed()
	}
}

// liveWorkers are the members that are workers and alive (suspect ones
// count as alive until gossip decides).
func liveWorkers(members []Member) []Member {
	var out []Member
	for _, m := range members {
		if m.Meta.Role == "worker" && ValidWorkerID(m.Meta.ID) && m.Status == "alive" {
			out = append(out, m)
		}
	}
	return out
}

// Members lists the gossip members (servers and workers); nil without
// gossip.
func (n *Node) Members() []Member {
	if n.gossip == nil {
		return nil
	}
	return n.gossip.Members()
}
