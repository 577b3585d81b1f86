package membership

import (
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster/internal/rounds"
)

// MemberMeta is what a member announces over gossip (JSON, at most
// memberlist.MetaMaxSize bytes). Servers fill the server fields; workers
// (package client/worker) the worker ones.
type MemberMeta = wire.MemberMeta

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

// Proof is the kept verdict of the admission check on m's latest
// announcement: nil when m proved that it belongs to this cluster, an
// error while it has not (or has not been checked yet). It serves display
// and filtering only: a step that changes the Raft configuration on m's
// word proves m again (ProveAgain).
func (m Member) Proof() error { return m.proof }

// errUnchecked: the admission check has not run yet on a member's latest
// announcement.
var errUnchecked = errors.New("not checked yet")

// errAnnouncedTwice: several alive gossip members announce one server id,
// so none of them is trusted with it.
var errAnnouncedTwice = errors.New("none of them is trusted")

// Gossip runs memberlist for a server: it announces the server's
// addresses, joins the configured peers (retrying until one answers),
// bootstraps Raft once BootstrapExpect servers of its cluster are seen,
// and, on the leader, admits servers that join as non-voters, promotes
// them and removes dead servers (autopilot.go).
type Gossip struct {
	cfg    Config
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

	// pilot is the leader's memory for admission, promotion and cleanup;
	// only the maintain goroutine touches it.
	pilot pilot
	// sharedIDs is what warnSharedIDs last logged; only the maintain
	// goroutine touches it.
	sharedIDs string
}

// Config is what Gossip needs from its node, and nothing more.
type Config struct {
	Addr string   // host:port to bind and advertise
	Join []string // peers to join
	Self MemberMeta
	Log  hclog.Logger
	Raft Raft
	// Leading reports whether this node is the established leader: only
	// then does gossip change the Raft configuration.
	Leading func() bool
	// Changed is signalled, without blocking, on every membership change;
	// Observed is called on it and on every verdict of proveMembers (the
	// HTTP addresses that Status names follow both).
	Changed  chan<- struct{}
	Observed func()
	// Keyring encrypts gossip; nil runs gossip in plain text. It is saved
	// in DataDir on every change (keyring.go).
	Keyring *memberlist.Keyring
	DataDir string
	// Prove is the admission check of a member that announces itself as
	// a server (the node's Config.ProveServer): nil when it belongs to
	// this cluster.
	Prove func(Member) error
	// AnswersAt checks that server id answers at Raft address addr now,
	// with a certificate that names id; nil without TLS, where nothing
	// can prove an id.
	AnswersAt func(id, addr string) error
	// Contact is this node's last answered Raft message to a server at
	// an address: the leader's proof that a server lives.
	Contact func(raft.ServerID, raft.ServerAddress) (rounds.Contact, bool)
	// Rules says when to promote, move and remove servers.
	Rules Rules
	// MovesVoters moves a voter to the address gossip announces as a
	// voter, instead of demoting it first: only the negative control of
	// the fault suite (tenure_unsafe_identity) sets it (docs/adr/0026).
	MovesVoters bool
	// Transport makes memberlist's transport bound to host:port (port 0:
	// any), for the memberlist configuration mc; the node's caps the
	// inbound stream connections.
	Transport func(host string, port int, mc *memberlist.Config) (Transport, error)
	// MemberlistLog is the logger memberlist writes to (the node's limits
	// the lines of each kind).
	MemberlistLog *log.Logger
	// Now is the clock of the leader's decisions and of the member table
	// (when a member changed status); nil: time.Now. memberlist keeps its
	// own time.
	Now func() time.Time
}

// Transport is memberlist's transport, as Config.Transport makes it.
type Transport interface {
	memberlist.NodeAwareTransport
	// GetAutoBindPort is the port bound when the configured one is 0.
	GetAutoBindPort() int
}

// Raft is the part of *raft.Raft that gossip drives.
type Raft interface {
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

// New starts gossip on cfg.Addr and the goroutines that join the peers
// and keep the membership (they end at Shutdown).
func New(cfg Config) (*Gossip, error) {
	host, portStr, err := net.SplitHostPort(cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("gossip-addr: %w", err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("gossip-addr: port %q: %w", portStr, err)
	}
	g := &Gossip{
		cfg:     cfg,
		events:  make(chan struct{}, 1),
		stop:    make(chan struct{}),
		members: make(map[string]*memberEntry),
		removed: make(map[string]time.Time),
		meta:    cfg.Self,
		pilot:   newPilot(),
	}
	mc := memberlist.DefaultLANConfig()
	// No LZW of every gossip packet: it was most of gossip's CPU (a
	// compressor's tables allocated per packet), more than halving it
	// let 500 members converge on two cores (test/bench/results/
	// 2026-11-24-scale.md). Compressed packets of older members are still
	// read. Workers do the same (client/worker/gossip.go).
	mc.EnableCompression = false
	// A server that comes back under its id at another address (a
	// recreated pod or container) takes its name over at once when it
	// left gracefully (shutdown leaves), and 5s after it was declared dead
	// when it crashed, instead of only once the dead member is forgotten
	// (30s more). Moving it in the Raft configuration still waits for the
	// leader's own rules (autopilot.go: proof, and silence at the old
	// address).
	mc.DeadNodeReclaimTime = 5 * time.Second
	if cfg.Keyring != nil {
		mc.Keyring = cfg.Keyring
		mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
		g.meta.Keys = keyFingerprints(cfg.Keyring)
	}
	mc.Name = cfg.Self.ID
	mc.BindAddr, mc.BindPort = host, port
	mc.AdvertiseAddr, mc.AdvertisePort = host, port
	mc.Delegate = g
	mc.Events = g
	// Within a limit per kind of line: a stranger's packets cannot flood
	// the log.
	mc.Logger = cfg.MemberlistLog
	tr, err := cfg.Transport(host, port, mc)
	if err != nil {
		return nil, err
	}
	if port == 0 {
		mc.BindPort, mc.AdvertisePort = tr.GetAutoBindPort(), tr.GetAutoBindPort()
	}
	mc.Transport = tr
	g.list, err = memberlist.Create(mc)
	if err != nil {
		tr.Shutdown()
		return nil, fmt.Errorf("start gossip on %s: %w", cfg.Addr, err)
	}
	g.wg.Add(2)
	go g.joinLoop(cfg.Join)
	go g.maintain()
	return g, nil
}

// Shutdown leaves the gossip pool, so that the others mark this member
// left at once (a recreated server at a new address may take its name
// over), and stops; its goroutines have ended when it returns.
func (g *Gossip) Shutdown() {
	close(g.stop)
	g.wg.Wait()
	if err := g.list.Leave(time.Second); err != nil {
		g.cfg.Log.Debug("leaving gossip failed", "error", err)
	}
	g.list.Shutdown()
}

// joinLoop joins the configured peers, retrying every few seconds until
// one answers (a peer may start later than this node), and afterwards
// joins again whenever no other server is alive in its view, so that a
// node cut off long enough for its peers to be declared dead (or whose
// peers all restarted) finds them again. It ends at shutdown.
func (g *Gossip) joinLoop(peers []string) {
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
					g.cfg.Log.Info("joined", "peers", n)
				} else {
					g.cfg.Log.Info("rejoined", "peers", n)
				}
				joined = true
			} else {
				g.cfg.Log.Debug("join failed, retrying", "error", err)
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
func (g *Gossip) seesOtherServers() bool {
	for _, m := range g.Members() {
		if m.Meta.Role == "server" && m.Meta.ID != g.cfg.Self.ID && m.Status == "alive" && m.proof == nil {
			return true
		}
	}
	return false
}

// maintain bootstraps when enough servers are seen and, while this node
// leads, reconciles the Raft configuration with gossip (autopilot.go). It
// runs on every membership event and every second.
func (g *Gossip) maintain() {
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
		if g.cfg.Leading() {
			g.reconcile()
		}
	}
}

func (g *Gossip) maybeBootstrap() {
	g.mu.Lock()
	meta := g.meta
	g.mu.Unlock()
	expect := g.cfg.Self.BootstrapExpect
	if expect == 0 || meta.Bootstrapped {
		return
	}
	var servers []raft.Server
	members := g.Members()
	shared := AnnouncedTwice(members)
	for _, m := range members {
		if m.Meta.Role != "server" || m.Status != "alive" {
			continue
		}
		if err := g.distrusts(m, shared, "not bootstrapping with this member"); errors.Is(err, errAnnouncedTwice) {
			return
		} else if err != nil {
			continue
		}
		if m.Meta.Bootstrapped {
			return // a cluster exists: wait to be added to it
		}
		if m.Meta.BootstrapExpect == 0 || m.Meta.NonVoter {
			continue
		}
		if m.Meta.BootstrapExpect != expect {
			g.cfg.Log.Error("peer expects a different cluster size; not bootstrapping", "peer", m.Name, "peer_expect", m.Meta.BootstrapExpect, "expect", expect)
			return
		}
		servers = append(servers, raft.Server{ID: raft.ServerID(m.Meta.ID), Address: raft.ServerAddress(m.Meta.RaftAddr)})
	}
	if len(servers) < expect {
		return
	}
	sort.Slice(servers, func(i, j int) bool { return servers[i].ID < servers[j].ID })
	err := g.cfg.Raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error()
	if err != nil && err != raft.ErrCantBootstrap {
		g.cfg.Log.Error("bootstrap failed", "error", err)
		return
	}
	g.cfg.Log.Info("bootstrapped raft", "servers", len(servers))
	g.announce(func(m *MemberMeta) { m.Bootstrapped = true }, "announce bootstrap failed")
}

// markMember announces, once this server has Raft state (it bootstrapped,
// or a leader added it and replicated to it), that it is no longer new.
func (g *Gossip) markMember() {
	g.mu.Lock()
	done := g.meta.Bootstrapped
	g.mu.Unlock()
	if done || g.cfg.Raft.LastIndex() == 0 {
		return
	}
	g.announce(func(m *MemberMeta) { m.Bootstrapped = true }, "announce membership failed")
}

// announce applies change to this server's metadata and announces it;
// failed is the log line of an announcement that fails.
func (g *Gossip) announce(change func(*MemberMeta), failed string) {
	g.mu.Lock()
	change(&g.meta)
	g.mu.Unlock()
	if err := g.list.UpdateNode(5 * time.Second); err != nil {
		g.cfg.Log.Warn(failed, "error", err)
	}
}

// Members lists the gossip members with their decoded metadata, sorted by
// name: the live ones, and the dead or departed ones of the last
// deadMemberTTL.
func (g *Gossip) Members() []Member {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]Member, 0, len(g.members))
	for name, e := range g.members {
		if e.member.Status != "alive" && g.now().Sub(e.since) > deadMemberTTL {
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
func (g *Gossip) record(node *memberlist.Node, status string) {
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
		e = &memberEntry{since: g.now()}
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
func (g *Gossip) proveMembers() {
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
		err := g.cfg.Prove(t.m)
		g.mu.Lock()
		if e := g.members[t.name]; e != nil && e.gen == t.gen {
			e.member.proof, e.proofGen = err, t.gen
		}
		g.mu.Unlock()
	}
	if len(list) > 0 && g.cfg.Observed != nil {
		g.cfg.Observed()
	}
}

// ProveAgain runs the admission check on m now, on the caller's
// goroutine, for a step that changes the Raft configuration on m's word:
// admitting it, moving or demoting a voter for it, readmitting it,
// promoting it. The verdict that proveMembers keeps (Member.proof) says
// only that m proved itself once, and a Raft address that relays to a
// live server proves only while that server lives; so the leader never
// acts on it, and it serves display and filtering only. A refusal
// replaces the kept verdict, and proveMembers checks m anew next round.
// It takes at most the check's own timeout (TLSProof: proofTimeout).
func (g *Gossip) ProveAgain(m Member) error {
	err := g.cfg.Prove(m)
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
	if same && g.cfg.Observed != nil {
		g.cfg.Observed()
	}
	return err
}

// warnSharedIDs logs, once per change, the server ids that more than one
// alive gossip member announces: a member announcing a real server's id is
// forged (or a server runs twice), and none of them is trusted for
// anything that needs an address (autopilot.go, ReadmitServer). Server
// addresses never come from gossip anyway (transport/addrchannel.go).
func (g *Gossip) warnSharedIDs() {
	var shared []string
	for id, k := range AnnouncedTwice(g.Members()) {
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
		g.cfg.Log.Warn("several gossip members announce one server id: none of them is trusted", "server_ids", s)
	} else {
		g.cfg.Log.Info("no server id is announced by several gossip members any more")
	}
}

// HTTPAddrOf is the HTTP address of server id, as the first alive member
// that proves it belongs to this cluster announces it. Only the negative
// control of the fault suite (tenure_unsafe_identity) forwards there: any
// member that passes the proof can claim any id (docs/adr/0026).
func (g *Gossip) HTTPAddrOf(id string) string {
	m, _ := g.aliveServer(id)
	return m.Meta.HTTPAddr
}

// ServerAlive says whether an alive member that proves it belongs to
// this cluster announces server id.
func (g *Gossip) ServerAlive(id string) bool {
	_, ok := g.aliveServer(id)
	return ok
}

// aliveServer is the first alive member that announces server id and
// proves it belongs to this cluster.
func (g *Gossip) aliveServer(id string) (Member, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, e := range g.members {
		if m := e.member; m.Meta.Role == "server" && m.Meta.ID == id && m.Status == "alive" && m.proof == nil {
			return m, true
		}
	}
	return Member{}, false
}

// NodeMeta implements memberlist.Delegate.
func (g *Gossip) NodeMeta(limit int) []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, err := json.Marshal(g.meta)
	if err != nil || len(b) > limit {
		g.cfg.Log.Error("member metadata too large", "bytes", len(b), "limit", limit)
		return nil
	}
	return b
}

// The rest of memberlist.Delegate: servers gossip nothing but metadata.
func (g *Gossip) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (g *Gossip) LocalState(join bool) []byte                { return nil }
func (g *Gossip) MergeRemoteState(buf []byte, join bool)     {}

// memberlist.EventDelegate: keep the table, and wake maintain.
func (g *Gossip) NotifyJoin(n *memberlist.Node)   { g.record(n, "alive") }
func (g *Gossip) NotifyLeave(n *memberlist.Node)  { g.record(n, "dead") }
func (g *Gossip) NotifyUpdate(n *memberlist.Node) { g.record(n, "alive") }

func (g *Gossip) kick() {
	select {
	case g.events <- struct{}{}:
	default:
	}
	select {
	case g.cfg.Changed <- struct{}{}:
	default:
	}
	if g.cfg.Observed != nil {
		g.cfg.Observed()
	}
}

// now is the time by Config.Now (time.Now when nil).
func (g *Gossip) now() time.Time {
	if g.cfg.Now == nil {
		return time.Now()
	}
	return g.cfg.Now()
}

// Serves reports whether the member (a worker) announces group g.
func (m Member) Serves(g string) bool { return slices.Contains(m.Meta.Groups, g) }

// NoteRemoved records that an operator removed server id through this
// node.
func (g *Gossip) NoteRemoved(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removed[id] = g.now()
}

// ForgetRemoved drops the record of NoteRemoved: an operator readmits id.
func (g *Gossip) ForgetRemoved(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.removed, id)
}

// removedLately reports whether this node removed server id through the
// API within the last minute. The leader does not add such a server back
// even if gossip still announces it as new (its announcement may lag).
func (g *Gossip) removedLately(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	at, ok := g.removed[id]
	if ok && g.now().Sub(at) > time.Minute {
		delete(g.removed, id)
		return false
	}
	return ok
}
