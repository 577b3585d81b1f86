package cluster

import (
	"encoding/json"
	"fmt"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"
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
}

// gossip runs memberlist for a server: it announces the server's addresses,
// joins the configured peers (retrying until one answers), bootstraps Raft
// once BootstrapExpect servers are seen, and, on the leader, adds servers
// that join to the Raft configuration.
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
	// keyringOps are keyring operations received over gossip, for maintain
	// to apply; keyringMu orders their application (keyring.go).
	keyringOps chan KeyringMessage
	keyringMu  sync.Mutex
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
	// changed is signalled, without blocking, on every membership change.
	changed chan<- struct{}
	// keyring encrypts gossip; nil runs gossip in plain text. It is saved
	// in dataDir on every change (keyring.go).
	keyring *memberlist.Keyring
	dataDir string
}

// raftMembership is the part of *raft.Raft that gossip drives.
type raftMembership interface {
	BootstrapCluster(raft.Configuration) raft.Future
	LastIndex() uint64
	GetConfiguration() raft.ConfigurationFuture
	AddVoter(raft.ServerID, raft.ServerAddress, uint64, time.Duration) raft.IndexFuture
	AddNonvoter(raft.ServerID, raft.ServerAddress, uint64, time.Duration) raft.IndexFuture
}

// memberEntry is one member as last announced.
type memberEntry struct {
	member Member
	since  time.Time // of the last change of status
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
		keyringOps:   make(chan KeyringMessage, 16),
		meta:         cfg.self,
	}
	mc := memberlist.DefaultLANConfig()
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
	// No date prefix, so hclog can read memberlist's [DEBUG]/[WARN] levels.
	mc.Logger = g.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	g.list, err = memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("start gossip on %s: %w", cfg.addr, err)
	}
	g.wg.Add(2)
	go g.joinLoop(cfg.join)
	go g.maintain()
	return g, nil
}

func (g *gossip) shutdown() {
	close(g.stop)
	g.wg.Wait()
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

// seesOtherServers reports whether another server is alive in this node's
// gossip view.
func (g *gossip) seesOtherServers() bool {
	for _, m := range g.Members() {
		if m.Meta.Role == "server" && m.Meta.ID != g.self.ID && m.Status == "alive" {
			return true
		}
	}
	return false
}

// maintain bootstraps when enough servers are seen and, while this node
// leads, adds newly seen servers to Raft. It runs on every membership event
// and every few seconds.
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
		case op := <-g.keyringOps:
			g.applyReceived(op)
		}
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
	for _, m := range g.Members() {
		if m.Meta.Role != "server" || m.Status != "alive" {
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

// reconcile adds to Raft the alive servers that are new: started with an
// empty data dir and not in the configuration. It never adds a server that
// has Raft state, so a server an operator removed stays removed, alive or
// not, until it is started again with an empty data dir. It never removes a
// server either: one that fails may come back; operators remove servers
// through the API.
func (g *gossip) reconcile() {
	f := g.raft.GetConfiguration()
	if f.Error() != nil {
		return
	}
	known := make(map[raft.ServerID]raft.ServerAddress)
	for _, s := range f.Configuration().Servers {
		known[s.ID] = s.Address
	}
	for _, m := range g.Members() {
		if m.Meta.Role != "server" || m.Status != "alive" || m.Meta.RaftAddr == "" || g.removedLately(m.Meta.ID) {
			continue
		}
		addr, isKnown := known[raft.ServerID(m.Meta.ID)]
		switch {
		case isKnown && addr == raft.ServerAddress(m.Meta.RaftAddr):
			continue // nothing to do
		case isKnown:
			// A member of the configuration came back at a new address
			// (a rescheduled pod): update it in place.
		case m.Meta.Bootstrapped:
			continue // has Raft state but was removed: stays out
		}
		id, newAddr := raft.ServerID(m.Meta.ID), raft.ServerAddress(m.Meta.RaftAddr)
		var err error
		if m.Meta.NonVoter {
			err = g.raft.AddNonvoter(id, newAddr, 0, 10*time.Second).Error()
		} else {
			err = g.raft.AddVoter(id, newAddr, 0, 10*time.Second).Error()
		}
		if err != nil {
			g.log.Warn("adding server failed", "server_id", id, "error", err)
			continue
		}
		g.log.Info("server added", "server_id", id, "raft_addr", newAddr, "voter", !m.Meta.NonVoter, "address_changed", isKnown)
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
	m := Member{Name: node.Name, Addr: node.Address(), Status: status}
	if err := json.Unmarshal(node.Meta, &m.Meta); err != nil {
		m.Meta = MemberMeta{Role: "unknown", ID: node.Name}
	}
	g.mu.Lock()
	e := g.members[node.Name]
	if e == nil || e.member.Status != m.Status {
		e = &memberEntry{since: time.Now()}
		g.members[node.Name] = e
	}
	e.member = m
	g.mu.Unlock()
	g.kick()
}

// httpAddrOf is the HTTP address of server id. Every API answer asks for
// the leader's, so it scans the table in place rather than copying and
// sorting it as Members does.
func (g *gossip) httpAddrOf(id string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, e := range g.members {
		if m := e.member; m.Meta.Role == "server" && m.Meta.ID == id && m.Status == "alive" {
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
}

// noteRemoved records that an operator removed server id through this node.
func (g *gossip) noteRemoved(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removed[id] = time.Now()
}

// removedLately reports whether this node removed server id through the API
// within the last minute. The leader does not add such a server back even
// if gossip still announces it as new (its announcement may lag).
func (g *gossip) removedLately(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	at, ok := g.removed[id]
	if ok && time.Since(at) > time.Minute {
		delete(g.removed, id)
		return false
	}
	return ok
}

// liveWorkers are the members that are workers and alive (suspect ones
// count as alive until gossip decides).
func liveWorkers(members []Member) []Member {
	var out []Member
	for _, m := range members {
		if m.Meta.Role == "worker" && m.Meta.ID != "" && m.Status == "alive" {
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
