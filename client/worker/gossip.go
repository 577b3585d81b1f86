package worker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/internal/wait"
	"github.com/tenure-io/tenure/client/wire"
)

// workerPushPull is how often a worker exchanges its full gossip state
// with a random member.
const workerPushPull = 5 * time.Second

// workerGossip is a worker's memberlist membership.
type workerGossip struct {
	list *memberlist.Memberlist
	log  hclog.Logger

	// keyring encrypts gossip; nil in plain text. Changed under mu.
	keyring *memberlist.Keyring

	mu   sync.Mutex
	meta wire.MemberMeta
	// servers are the names of the servers alive in this worker's view,
	// kept from memberlist's events (never read from its nodes, which
	// would race with its updates).
	servers map[string]bool
}

// startWorkerGossip joins the cluster's gossip as a worker of w's group,
// retrying the join until it succeeds or ctx ends.
func startWorkerGossip(ctx context.Context, w *Worker) (*workerGossip, error) {
	servers := w.cfg.join
	if len(servers) == 0 {
		servers = w.c.Config().Addresses
	}
	place, err := chooseGossipPlace(w.cfg.gossipAddr, w.cfg.gossipAddrSet, w.cfg.advertise, servers, routedIP)
	if err != nil {
		return nil, err
	}
	kr, err := workerKeyring(w.cfg)
	if err != nil {
		return nil, err
	}
	g := &workerGossip{
		log:     w.log.Named("gossip"),
		servers: make(map[string]bool),
		meta:    wire.MemberMeta{Role: "worker", ID: w.cfg.id, Holder: w.cfg.holder, Groups: []string{w.group}, Capacity: w.cfg.capacity},
		keyring: kr,
	}
	mc := memberlist.DefaultLANConfig()
	// As the servers (cluster/internal/membership/gossip.go): compressing every gossip packet
	// cost more CPU than all the rest of gossip.
	mc.EnableCompression = false
	// As the servers: a member back at a new address under its name (a
	// server recreated at another IP) is taken at its new address 5s after
	// it was declared dead, not once forgotten.
	mc.DeadNodeReclaimTime = 5 * time.Second
	if kr != nil {
		mc.Keyring = kr
		mc.GossipVerifyIncoming, mc.GossipVerifyOutgoing = true, true
		g.meta.Keys = keyFingerprints(kr)
	}
	mc.Name = w.cfg.holder // unique, so two Workers of one id never clash
	mc.BindAddr, mc.BindPort = place.bindHost, place.bindPort
	mc.AdvertiseAddr, mc.AdvertisePort = place.advHost, place.advPort
	if mc.AdvertisePort == 0 {
		mc.AdvertisePort = place.bindPort // 0: memberlist advertises the port it bound
	}
	// Servers that all restarted before this worker noticed them gone
	// know nothing of it until a full state exchange: do one every 5s
	// (memberlist's LAN default is 30s), so the balancer sees the worker
	// again within seconds.
	mc.PushPullInterval = workerPushPull
	mc.Delegate = g
	mc.Events = g
	mc.Logger = g.log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	g.list, err = memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("start worker gossip on %s: %w", net.JoinHostPort(place.bindHost, fmt.Sprint(place.bindPort)), err)
	}
	g.log.Debug("gossip started", "bind", net.JoinHostPort(place.bindHost, fmt.Sprint(place.bindPort)), "advertise", g.list.LocalNode().Address())
	report := joinReport{log: g.log}
	for {
		if n := g.join(ctx, w, &report); n > 0 {
			g.log.Debug("joined", "peers", n)
			return g, nil
		}
		if err := wait.Sleep(ctx, w.cfg.retry); err != nil {
			g.list.Shutdown()
			return nil, err
		}
	}
}

// join joins the servers (WithJoin's, else those the cluster lists) and
// returns how many answered; report says why none did.
func (g *workerGossip) join(ctx context.Context, w *Worker, report *joinReport) int {
	peers, members := w.cfg.join, []wire.Member(nil)
	var err error
	if len(peers) == 0 {
		if members, _, err = w.c.Members(ctx); err != nil {
			err = fmt.Errorf("list the servers: %w", err)
		}
		peers = serverGossipAddrs(members)
	}
	if len(peers) > 0 {
		var n int
		if n, err = g.list.Join(peers); n > 0 {
			report.joined(n)
			return n
		}
	}
	if ctx.Err() == nil {
		g.log.Debug("join failed", "error", err)
		report.failed(peers, err, g.keyFingerprints(), members)
	}
	return 0
}

// serverGossipAddrs are the gossip addresses of the alive servers among
// members.
func serverGossipAddrs(members []wire.Member) []string {
	var out []string
	for _, m := range members {
		if m.Role == "server" && m.Status == "alive" {
			out = append(out, m.Addr)
		}
	}
	return out
}

// keyFingerprints are the fingerprints of the worker's gossip keys, as it
// announces them; nil without encryption.
func (g *workerGossip) keyFingerprints() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.meta.Keys...)
}

// keepJoined joins the servers again whenever none is alive in this
// worker's view: after every server restarted, or after a cut long enough
// for the servers to declare this worker dead and forget it. It returns
// when ctx ends.
func (g *workerGossip) keepJoined(ctx context.Context, w *Worker) {
	report := joinReport{log: g.log}
	for wait.Sleep(ctx, 2*time.Second) == nil {
		if g.seesServer() {
			continue
		}
		if n := g.join(ctx, w, &report); n > 0 {
			g.log.Info("rejoined", "peers", n)
		}
	}
}

// seesServer reports whether a server is alive in this worker's view.
func (g *workerGossip) seesServer() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.servers) > 0
}

// record follows servers joining and leaving. memberlist calls the event
// delegate with its node lock held, so node's fields are stable here.
func (g *workerGossip) record(node *memberlist.Node, alive bool) {
	var meta wire.MemberMeta
	if json.Unmarshal(node.Meta, &meta) != nil || meta.Role != "server" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if alive {
		g.servers[node.Name] = true
		return
	}
	if g.servers[node.Name] {
		g.log.Info("server gone from gossip (left or failed)", "server", node.Name)
	}
	delete(g.servers, node.Name)
}

// memberlist.EventDelegate.
func (g *workerGossip) NotifyJoin(n *memberlist.Node)   { g.record(n, true) }
func (g *workerGossip) NotifyUpdate(n *memberlist.Node) { g.record(n, true) }
func (g *workerGossip) NotifyLeave(n *memberlist.Node)  { g.record(n, false) }

// setDraining announces (or withdraws) that the worker is draining,
// waiting up to wait for the announcement to go out.
func (g *workerGossip) setDraining(draining bool, wait time.Duration) error {
	g.mu.Lock()
	g.meta.Draining = draining
	g.mu.Unlock()
	if err := g.list.UpdateNode(wait); err != nil {
		return fmt.Errorf("announce draining: %w", err)
	}
	return nil
}

// leave tells the others this worker is gone, then stops gossip.
func (g *workerGossip) leave() {
	if err := g.list.Leave(2 * time.Second); err != nil {
		g.log.Debug("leave failed", "error", err)
	}
	g.list.Shutdown()
}

// NodeMeta implements memberlist.Delegate.
func (g *workerGossip) NodeMeta(limit int) []byte {
	g.mu.Lock()
	defer g.mu.Unlock()
	b, err := json.Marshal(g.meta)
	if err != nil || len(b) > limit {
		g.log.Error("worker metadata too large", "bytes", len(b), "limit", limit)
		return nil
	}
	return b
}

// NotifyMsg implements memberlist.Delegate: a server's keyring change.
// memberlist delivers only messages that decrypted under one of this
// worker's keys.
func (g *workerGossip) NotifyMsg(b []byte) {
	if len(b) == 0 || b[0] != msgKeyring || g.keyring == nil {
		return
	}
	var m wire.KeyringMessage
	if err := json.Unmarshal(b[1:], &m); err != nil {
		g.log.Warn("ignoring a malformed keyring message", "error", err)
		return
	}
	// Applied here, in arrival order (an install and the use that follows
	// must not swap); only the announcement goes apart, since it must not
	// block memberlist.
	g.mu.Lock()
	err := applyKeyringMessage(g.keyring, m)
	if err == nil {
		g.meta.Keys = keyFingerprints(g.keyring)
	}
	g.mu.Unlock()
	if err != nil {
		g.log.Warn("keyring change refused", "op", m.Op, "error", err)
		return
	}
	g.log.Info("gossip keyring changed", "op", m.Op)
	go func() {
		if err := g.list.UpdateNode(5 * time.Second); err != nil {
			g.log.Debug("announcing keyring failed", "error", err)
		}
	}()
}

// msgKeyring is the type byte of a keyring change sent over gossip.
const msgKeyring byte = 'K'

// The rest of memberlist.Delegate: workers gossip nothing else.
func (g *workerGossip) GetBroadcasts(overhead, limit int) [][]byte { return nil }
func (g *workerGossip) LocalState(join bool) []byte                { return nil }
func (g *workerGossip) MergeRemoteState(buf []byte, join bool)     {}

// EnvGossipKey names the environment variable that a Worker reads its
// gossip keys from when WithGossipKeys is not given: base64 keys separated
// by commas, the primary first.
const EnvGossipKey = "TENURE_GOSSIP_KEY"

// ParseGossipKeys decodes base64 gossip keys separated by commas, the
// primary first. Each must be 32 bytes.
func ParseGossipKeys(s string) ([][]byte, error) {
	var keys [][]byte
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, err := base64.StdEncoding.DecodeString(part)
		if err != nil {
			return nil, fmt.Errorf("%w: gossip key: not base64: %v", client.ErrInvalid, err)
		}
		if len(k) != 32 {
			return nil, fmt.Errorf("%w: gossip key: %d bytes, want 32", client.ErrInvalid, len(k))
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// WithGossipKeys sets the worker's gossip keys, the primary first: the
// cluster's servers refuse a worker without a key of theirs once gossip
// encryption is on. The default reads EnvGossipKey. A worker follows the
// keyring changes that servers send it while it runs; after a rotation,
// give it the new key for its next start.
func WithGossipKeys(keys ...[]byte) WorkerOption {
	return func(c *workerConfig) { c.gossipKeys, c.gossipKeysSet = keys, true }
}

// workerKeyring builds the keyring of a worker's gossip; nil without keys.
func workerKeyring(cfg workerConfig) (*memberlist.Keyring, error) {
	keys := cfg.gossipKeys
	if !cfg.gossipKeysSet {
		var err error
		if keys, err = ParseGossipKeys(os.Getenv(EnvGossipKey)); err != nil {
			return nil, fmt.Errorf("%s: %w", EnvGossipKey, err)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	return memberlist.NewKeyring(keys[1:], keys[0])
}

// keyFingerprints are the fingerprints of kr's keys, primary first.
func keyFingerprints(kr *memberlist.Keyring) []string {
	return wire.KeyFingerprints(kr.GetPrimaryKey(), kr.GetKeys())
}

// applyKeyringMessage changes kr as a server's message says.
func applyKeyringMessage(kr *memberlist.Keyring, m wire.KeyringMessage) error {
	key, err := base64.StdEncoding.DecodeString(m.Key)
	if err != nil {
		return fmt.Errorf("gossip key: not base64: %w", err)
	}
	switch m.Op {
	case wire.KeyringInstall:
		return kr.AddKey(key)
	case wire.KeyringUse:
		return kr.UseKey(key)
	case wire.KeyringRemove:
		return kr.RemoveKey(key)
	}
	return fmt.Errorf("keyring op %q is not install, use or remove", m.Op)
}
