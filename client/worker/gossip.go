package worker

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
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
		meta: wire.MemberMeta{Role: "worker", ID: w.cfg.id, Holder: w.cfg.holder, Groups: []string{w.group}, Capacity: w.cfg.capacity,
			LoadCapacity: w.cfg.loadCapacity, PrepareMS: w.cfg.prepareTime.Milliseconds()},
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

// defaultGossipAddr is where a worker's gossip binds unless
// WithGossipAddr says otherwise.
const defaultGossipAddr = "127.0.0.1:0"

// gossipPlace is where a worker's gossip binds and what it announces.
// advHost "" lets memberlist pick; advPort 0 announces the bound port.
type gossipPlace struct {
	bindHost string
	bindPort int
	advHost  string
	advPort  int
}

// chooseGossipPlace decides where a worker's gossip binds and which
// address it announces to the servers:
//
//   - an explicit advertise address (WithGossipAdvertise) is announced as
//     given; when the bind address is the default and the advertised host
//     is not loopback, gossip binds every interface so that it is reachable
//     there;
//   - an explicit, specific bind address (WithGossipAddr "10.0.0.7:7946")
//     is also the announced one;
//   - otherwise (the loopback default, or an unspecified "0.0.0.0"/"[::]")
//     the first server that route finds decides: when the local address
//     that reaches it is not loopback, that address is announced (and the
//     default binds it instead of loopback, which the servers could not
//     reach); when the servers are on loopback, loopback is kept.
//
// route returns the local IP that routes to a server address; it is
// injected so that the choice is a pure function.
func chooseGossipPlace(bind string, bindSet bool, advertise string, servers []string, route func(string) (net.IP, error)) (gossipPlace, error) {
	host, port, err := splitPort(bind)
	if err != nil {
		return gossipPlace{}, fmt.Errorf("%w: gossip address %q: %v", client.ErrInvalid, bind, err)
	}
	p := gossipPlace{bindHost: host, bindPort: port}
	unspecified := host == "" || net.ParseIP(host) != nil && net.ParseIP(host).IsUnspecified()
	if advertise != "" {
		ah, ap := advertise, 0
		if strings.Contains(advertise, ":") && net.ParseIP(advertise) == nil {
			if ah, ap, err = splitPort(advertise); err != nil {
				return gossipPlace{}, fmt.Errorf("%w: gossip advertise address %q: %v", client.ErrInvalid, advertise, err)
			}
		}
		p.advHost, p.advPort = ah, ap
		if !bindSet && !isLoopbackHost(ah) {
			p.bindHost = "0.0.0.0"
		}
		return p, nil
	}
	if bindSet && !unspecified {
		p.advHost = host
		return p, nil
	}
	if unspecified {
		p.advHost = "" // memberlist's pick, unless a server says better
	}
	for _, s := range servers {
		ip, err := route(s)
		if err != nil || ip == nil {
			continue
		}
		switch {
		case ip.IsLoopback() && !bindSet:
			p.advHost = host
		case ip.IsLoopback():
			p.advHost = "127.0.0.1"
		default:
			p.advHost = ip.String()
			if !bindSet {
				p.bindHost = p.advHost // that interface only, not every one
			}
		}
		return p, nil
	}
	if !unspecified {
		p.advHost = host
	}
	return p, nil
}

func splitPort(addr string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("port %q is not a number in [0, 65535]", portStr)
	}
	return host, port, nil
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// serverHostPort turns a server address as Config.Addresses or WithJoin
// take it ("host:port", "http://host:port") into "host:port".
func serverHostPort(addr string) string {
	if strings.Contains(addr, "://") {
		if u, err := url.Parse(addr); err == nil {
			addr = u.Host
		}
	}
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, "7946")
	}
	return addr
}

// routedIP is the local IP of the interface that routes to server: a UDP
// socket "connected" to it learns its local address from the routing
// table; no packet is sent.
func routedIP(server string) (net.IP, error) {
	conn, err := net.Dial("udp", serverHostPort(server))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	a, ok := conn.LocalAddr().(*net.UDPAddr)
	if !ok {
		return nil, fmt.Errorf("local address %v is not UDP", conn.LocalAddr())
	}
	return a.IP, nil
}

// joinReportEvery is how often a worker repeats why its gossip join keeps
// failing, while the reason stays the same.
const joinReportEvery = 30 * time.Second

// joinQuietFailures is how many joins may fail for want of an answer
// before the worker says so (servers that start with it answer soon); a
// failure that a gossip key explains is said at once.
const joinQuietFailures = 3

// keyFix names what gives a worker the cluster's gossip key.
const keyFix = "give the worker the servers' gossip key: worker.WithGossipKeys, or the " + EnvGossipKey +
	" variable (tenure demo-worker reads it); tenure operator keyring list shows the servers' key fingerprints"

// joinReport says, through the worker's logger, why its gossip join of the
// servers fails: at once for a reason about gossip keys, after a few
// failures when no server answered, then again when the reason changes and
// every joinReportEvery while it lasts. Only the joining goroutine uses it.
type joinReport struct {
	log      hclog.Logger
	failures int
	last     string
	at       time.Time
}

// joinDiagnosis is why a join failed, and what fixes it.
type joinDiagnosis struct {
	keys   bool // the gossip keys explain it (logged at Error)
	reason string
	fix    string
}

// failed records a failed join of peers with err and logs why, if it is
// time to. mine are the fingerprints of the worker's keys (nil without
// encryption); servers are the members the cluster lists, nil when it
// could not be asked.
func (r *joinReport) failed(peers []string, err error, mine []string, servers []wire.Member) {
	r.failures++
	d := diagnoseJoin(peers, err, mine, servers)
	if !d.keys && r.failures < joinQuietFailures {
		return
	}
	if d.reason == r.last && time.Since(r.at) < joinReportEvery {
		return
	}
	r.last, r.at = d.reason, time.Now()
	args := []any{"reason", d.reason, "fix", d.fix, "servers", strings.Join(peers, ","), "attempts", r.failures}
	if err != nil {
		// One line: memberlist's join error lists its attempts on several.
		args = append(args, "error", strings.Join(strings.Fields(err.Error()), " "))
	}
	if d.keys {
		r.log.Error("gossip with the servers fails: the balancer gives this worker no keys", args...)
	} else {
		r.log.Warn("gossip with the servers fails: the balancer gives this worker no keys", args...)
	}
}

// joined logs, after a reported failure, that the join succeeded.
func (r *joinReport) joined(n int) {
	if r.last != "" {
		r.log.Info("gossip with the servers works again", "peers", n, "attempts", r.failures)
	}
	r.failures, r.last = 0, ""
}

// diagnoseJoin explains a failed join of peers: from the gossip keys the
// servers announce (GET /v1/members) when servers is not nil, else from
// memberlist's error.
func diagnoseJoin(peers []string, err error, mine []string, servers []wire.Member) joinDiagnosis {
	var theirs []string
	encrypted, plain := 0, 0
	for _, m := range servers {
		if m.Role != "server" || m.Status != "alive" {
			continue
		}
		if len(m.Meta.Keys) == 0 {
			plain++
			continue
		}
		encrypted++
		for _, k := range m.Meta.Keys {
			if !slices.Contains(theirs, k) {
				theirs = append(theirs, k)
			}
		}
	}
	shared := slices.ContainsFunc(mine, func(k string) bool { return slices.Contains(theirs, k) })
	text := ""
	if err != nil {
		text = strings.ToLower(err.Error())
	}
	switch {
	case encrypted > 0 && len(mine) == 0,
		servers == nil && len(mine) == 0 && strings.Contains(text, "encrypt"):
		r := "the servers' gossip is encrypted and this worker has no gossip key"
		if len(theirs) > 0 {
			r = fmt.Sprintf("the servers' gossip is encrypted (key fingerprints %s) and this worker has no gossip key", strings.Join(theirs, ","))
		}
		return joinDiagnosis{keys: true, reason: r, fix: keyFix}
	case encrypted > 0 && !shared:
		return joinDiagnosis{keys: true, reason: fmt.Sprintf("this worker's gossip keys (fingerprints %s) are none of the servers' (%s)",
			strings.Join(mine, ","), strings.Join(theirs, ",")), fix: keyFix}
	case servers == nil && len(mine) > 0 && strings.Contains(text, "no installed keys could decrypt"):
		return joinDiagnosis{keys: true, reason: fmt.Sprintf("the servers cannot decrypt this worker's gossip: its keys (fingerprints %s) are not theirs", strings.Join(mine, ",")), fix: keyFix}
	case plain > 0 && encrypted == 0 && len(mine) > 0,
		servers == nil && len(mine) > 0 && strings.Contains(text, "encryption is not configured"):
		return joinDiagnosis{keys: true, reason: "this worker encrypts its gossip but the servers' gossip is not encrypted",
			fix: "start the worker without a gossip key (worker.WithGossipKeys, " + EnvGossipKey + "), or the servers with one (-gossip-key)"}
	case len(peers) == 0 && servers == nil:
		return joinDiagnosis{reason: "the worker cannot ask the cluster for its servers' gossip addresses (GET /v1/members)",
			fix: "check that the client reaches the servers' HTTP API (Config.Addresses), or name the servers' gossip addresses with worker.WithJoin"}
	case len(peers) == 0:
		return joinDiagnosis{reason: "the cluster lists no alive server to join (GET /v1/members)",
			fix: "start the servers with gossip (-gossip-addr), or name their gossip addresses with worker.WithJoin"}
	}
	return joinDiagnosis{reason: "no server answered the worker's gossip join",
		fix: "check that the servers' gossip addresses (-gossip-addr) are reachable from the worker, and that the servers reach the address it announces (worker.WithGossipAdvertise)"}
}
