package nodeconfig

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tenure-io/tenure/cluster/internal/acl"
	"github.com/tenure-io/tenure/cluster/internal/certs"
	"github.com/tenure-io/tenure/cluster/internal/clock"
	"github.com/tenure-io/tenure/cluster/internal/membership"
	"github.com/tenure-io/tenure/cluster/internal/placement"
)

// ErrACLsNeedAuthenticatedRaft is wrapped by Validate for a configuration
// with ACLs on whose Raft would listen on plain TCP.
var ErrACLsNeedAuthenticatedRaft = errors.New("ACLs need authenticated Raft")

// Peer names a server of a statically bootstrapped cluster.
type Peer struct {
	ID       string
	RaftAddr string
	HTTPAddr string
}

// Config configures a Node. Build it from DefaultConfig; New validates it.
type Config struct {
	// NodeID names this server in Raft and gossip. Required, stable
	// across restarts.
	NodeID string
	// DataDir holds raft.db and the snapshots. Required.
	DataDir string
	// HTTPAddr is the address other nodes forward requests to; it is
	// announced over gossip.
	HTTPAddr string
	// RaftAddr is the Raft TCP bind address, and the address announced to
	// the other servers unless RaftAdvertise is set. A host name is
	// resolved once, at start. Ignored when Transport is set.
	RaftAddr string
	// RaftAdvertise, if set, is the Raft address announced to the other
	// servers and kept in the Raft configuration, as given: a DNS name is
	// resolved on each dial, so a server that comes back at another IP
	// under the same name (a recreated pod or container) is reached there
	// at once, without a change of the configuration.
	RaftAdvertise string
	// GossipAddr is the memberlist bind address. Empty disables gossip:
	// then InitialCluster must bootstrap the node.
	GossipAddr string
	// BootstrapExpect makes the node bootstrap Raft, together with its
	// peers, once it sees this many servers over gossip that were started
	// with the same setting. 0 never bootstraps through gossip.
	BootstrapExpect int
	// Join lists gossip addresses to join at start.
	Join []string
	// NonVoter makes the node join as a non-voting member.
	NonVoter bool
	// AllowLostRaftState starts a server whose identity file says it has
	// been a member of a cluster although its Raft state is gone; it is
	// refused otherwise (ADR 0015). Safe only once the server has been
	// removed from the Raft configuration.
	AllowLostRaftState bool
	// InitialCluster bootstraps Raft with this fixed set of servers when
	// the data dir is empty (the static alternative to BootstrapExpect).
	InitialCluster []Peer
	// TLS, when its certificate and key are set, puts Raft on mutual TLS:
	// every peer is verified against TLS.CAFile (required then) and must
	// carry the server role of ClusterName (certs.VerifyServer).
	TLS certs.Files
	// GossipKey, 32 bytes, turns on gossip encryption: it seeds the
	// keyring of a data dir that has none (a data dir's keyring, changed
	// by rotations, wins over it). Nil gossips in plain text unless the
	// data dir has a keyring.
	GossipKey []byte

	// ClusterName names the cluster. Servers announce it over gossip; the
	// leader admits to Raft only servers that prove they belong to this
	// cluster (ProveServer), and bootstraps only with such servers. With
	// TLS, a Raft peer must hold a certificate carrying
	// server.<ClusterName>.tenure. It is one DNS label (lower-case
	// letters, digits, '-'; at most 63).
	ClusterName string
	// ProveServer decides whether a gossip member that announces itself
	// as a server may join Raft: nil when it has proven it belongs to
	// this cluster. Gossip calls it outside its locks, once for each new
	// announcement of a server (not on every request), and the leader
	// again right before it admits, moves, demotes, promotes or readmits
	// a server on a member's word (an operator's readmit calls it from the
	// request's goroutine, so it must be safe for concurrent use). It may
	// take a moment, e.g. to dial the member, but should give up within a
	// few seconds; until it has answered, the member counts as not
	// proven. Nil means
	// ClusterNameProof(ClusterName): anyone who can reach the gossip port
	// and knows the name passes, and the node warns at start that the
	// cluster is insecure.
	ProveServer func(membership.Member) error
	// ServerStabilization is how long a new non-voting server must stay
	// healthy on the leader (answering Raft at its address, its log within
	// MaxCatchUpLag entries of the leader's commit index) before the
	// leader promotes it to voter, while the cluster has fewer voters than
	// its configured size (Voters).
	ServerStabilization time.Duration
	// DeadServerCleanup is how long a server must have been dead (failed
	// or left on gossip, and no answer to the leader's Raft messages)
	// before the leader removes it from the Raft configuration; voters only
	// while enough voters remain (see membership.removableDeadVoters). 0 never
	// removes a server on its own.
	DeadServerCleanup time.Duration
	// MaxCatchUpLag is how many entries a server's log may trail the
	// leader's commit index and still count as caught up for promotion.
	MaxCatchUpLag uint64
	// ReadyMaxLagEntries and ReadyMaxLagTime bound how far this node's
	// applied index may trail the leader's commit index, in entries and
	// in time, before it reports not ready (Node.Health); a failed write
	// of the Raft stores makes it not ready until a write succeeds and
	// ReadyMaxLagTime has passed since the failure.
	ReadyMaxLagEntries uint64
	ReadyMaxLagTime    time.Duration
	// hooks are for the tests of package cluster (TestHooks).
	hooks Hooks

	// MinTTL and MaxTTL bound the TTL of every acquisition. MinTTL must be
	// at least twice ElectionTimeout, so a lease outlives a failover.
	MinTTL, MaxTTL time.Duration
	// MaxWait bounds the wait of a blocking acquire.
	MaxWait time.Duration
	// MaxPending bounds the writes queued on the leader; past it, writes
	// fail with ErrOverloaded.
	MaxPending int
	// MaxBatch bounds the commands in one log entry.
	MaxBatch int
	// MaxWaiters bounds the blocking acquirers queued on the leader, over
	// every key; past it, a blocking acquire of a held key fails with
	// ErrOverloaded instead of queueing.
	MaxWaiters int
	// FreeKeyRetention is how long the leader keeps the record of a key
	// that is free (released, expired or revoked) before it proposes to
	// forget it (fsm.Forget): a key used once (a one-off lock, a bench run)
	// does not stay listed for ever. The leader counts on its monotonic
	// clock from when it saw the key free, or from its promotion for keys
	// free by then. Keys of groups are kept. 0 keeps every record.
	FreeKeyRetention time.Duration
	// BackupDir, if set, is where the leader writes a backup of the whole
	// state (Backup) every BackupInterval, keeping the BackupKeep newest
	// (runBackups, cluster/restore.go). Only the leader writes: each
	// server writes to its own BackupDir while it leads.
	BackupDir      string
	BackupInterval time.Duration
	BackupKeep     int
	// EventHistory is how many events (GET /v1/events) the node keeps in
	// memory; older ones are dropped, whole log entries at a time.
	EventHistory int
	// BalanceDebounce is how long the leader's balancer lets membership
	// and group changes settle before it computes a new placement.
	BalanceDebounce time.Duration
	// BalanceSettle is how long a new leader waits before its first
	// placement, so that its gossip view of the workers is complete.
	BalanceSettle time.Duration
	// DefaultStuckGrace is the stuck grace of a group that sets none and
	// whose keys never had a lease (otherwise it is twice the largest TTL
	// of their leases): how long a key may stay free while targeted at a
	// live worker before the balancer marks the worker stuck.
	DefaultStuckGrace time.Duration
	// StuckCheck is how often the leader's balancer looks at the leases of
	// the groups' keys for workers that do not take their targets.
	StuckCheck time.Duration
	// LoadHalfLife is the half-life of the leader's averages of the loads
	// that renewals report: a steady new load is half-way into a key's
	// average after it.
	LoadHalfLife time.Duration

	// ACLEnabled makes every request need a token with the right for it
	// (package httpapi enforces it), and the balancer plan keys only to
	// workers admitted by a token (RegisterWorker). It needs authenticated
	// Raft: TLS set, or a Transport of the caller's (ValidateRaftAuth).
	ACLEnabled bool
	// ACLDefaultPolicy is what a request without a token may do while
	// ACLs are enabled: ACLDeny (nothing) or ACLAllow (everything but acl).
	ACLDefaultPolicy string

	// Raft timings.
	HeartbeatTimeout   time.Duration
	ElectionTimeout    time.Duration
	LeaderLeaseTimeout time.Duration
	CommitTimeout      time.Duration
	SnapshotInterval   time.Duration
	SnapshotThreshold  uint64
	TrailingLogs       uint64

	// Conns caps the inbound connections of the Raft and gossip ports and
	// bounds the Raft handshake (connlimit.go).
	Conns ConnLimits

	// Transport replaces the TCP transport: Raft then opens no port of its
	// own (raft.InmemTransport: tests, and `tenure server -dev`). With
	// ACLEnabled, the caller vouches that only the cluster's servers can
	// reach it.
	Transport raft.Transport
	// ConfirmDial, with Transport, connects to the leadership-confirmation
	// channel of the server at a Raft address (on TCP it shares the Raft
	// port); the other end is given to that server's Node.ServeConfirm.
	// Without it, a cluster of more than one voter on Transport cannot
	// confirm leadership: renewals and linearizable reads fail.
	ConfirmDial func(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error)
	// Clock is the lessor's time source.
	Clock clock.Clock
	// Logger is the parent logger; the node names its children.
	Logger hclog.Logger
	// Registerer receives the node's Prometheus metrics; nil skips them.
	Registerer prometheus.Registerer
	// PeerMetrics, if not nil, is told the servers of each committed Raft
	// configuration, to drop the per-peer series of removed servers
	// (GoMetricsSink.RetainPeers).
	PeerMetrics interface{ RetainPeers(ids []string) }
}

// DefaultConfig returns a Config with every default set; the caller fills in
// NodeID, DataDir and addresses.
func DefaultConfig() Config {
	return Config{
		HTTPAddr:          "127.0.0.1:7500",
		RaftAddr:          "127.0.0.1:7501",
		GossipAddr:        "127.0.0.1:7502",
		MinTTL:            2 * time.Second,
		MaxTTL:            time.Hour,
		MaxWait:           10 * time.Minute,
		MaxPending:        16384,
		MaxBatch:          1024,
		MaxWaiters:        16384,
		EventHistory:      DefaultEventHistory,
		BalanceDebounce:   500 * time.Millisecond,
		BalanceSettle:     3 * time.Second,
		FreeKeyRetention:  24 * time.Hour,
		BackupInterval:    time.Hour,
		BackupKeep:        24,
		DefaultStuckGrace: placement.DefaultStuckGrace,
		StuckCheck:        time.Second,
		LoadHalfLife:      30 * time.Second,
		ACLDefaultPolicy:  acl.Deny,
		// Chosen by measurement (docs/performance.md, "Raft timings"): a leader kill to
		// the first acquisition on a survivor in about 0.3 s, and no
		// election in 10 minutes of full load on two cores.
		HeartbeatTimeout:   100 * time.Millisecond,
		ElectionTimeout:    100 * time.Millisecond,
		LeaderLeaseTimeout: 100 * time.Millisecond,
		CommitTimeout:      50 * time.Millisecond,
		SnapshotInterval:   2 * time.Minute,
		SnapshotThreshold:  8192,
		TrailingLogs:       10240,
		Clock:              clock.System{},
		Logger:             hclog.NewNullLogger(),

		// Who becomes a voter, and when a dead server leaves.
		ClusterName:         "tenure",
		ServerStabilization: 10 * time.Second,
		DeadServerCleanup:   5 * time.Minute,
		MaxCatchUpLag:       256,
		ReadyMaxLagEntries:  DefaultReadyMaxLagEntries,
		ReadyMaxLagTime:     DefaultReadyMaxLagTime,
		Conns:               DefaultConnLimits(),
	}
}

// Validate checks every field and the relations between them; its errors
// name the field.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.NodeID == "" {
		bad("node-id: required")
	}
	if c.DataDir == "" {
		bad("data-dir: required")
	}
	checkAddr := func(name, addr string, required bool) {
		if addr == "" {
			if required {
				bad("%s: required", name)
			}
			return
		}
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			bad("%s: %q is not host:port: %v", name, addr, err)
			return
		}
		// Peers dial these addresses: 0.0.0.0 or :: would point them at
		// themselves.
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			bad("%s: %q is announced to peers; give a routable address, not an unspecified one", name, addr)
		}
	}
	checkAddr("http-addr", c.HTTPAddr, true)
	checkAddr("raft-addr", c.RaftAddr, c.Transport == nil)
	checkAddr("raft-advertise", c.RaftAdvertise, false)
	checkAddr("gossip-addr", c.GossipAddr, false)
	if host, _, err := net.SplitHostPort(c.GossipAddr); c.GossipAddr != "" && err == nil && net.ParseIP(host) == nil {
		bad("gossip-addr: %q must be an IP address, not a host name", c.GossipAddr)
	}
	for _, j := range c.Join {
		checkAddr("join", j, true)
	}
	if c.ClusterName == "" {
		bad("cluster-name: required")
	} else if err := certs.CheckClusterName(c.ClusterName); err != nil {
		bad("cluster-name: %v", err)
	}
	if c.TLS.Enabled() && c.TLS.CAFile == "" {
		bad("tls-ca-file: required with TLS: Raft peers are verified against it")
	}
	if c.GossipKey != nil && len(c.GossipKey) != 32 {
		bad("gossip-key: %d bytes, want 32 (make one with tenure keygen)", len(c.GossipKey))
	}
	if c.BootstrapExpect < 0 {
		bad("bootstrap-expect: %d is negative", c.BootstrapExpect)
	}
	if c.BootstrapExpect > 0 && c.GossipAddr == "" {
		bad("bootstrap-expect: needs gossip-addr, servers find each other through gossip")
	}
	if c.BootstrapExpect > 0 && len(c.InitialCluster) > 0 {
		bad("bootstrap-expect: set either it or an initial cluster, not both")
	}
	if c.BootstrapExpect > 0 && c.NonVoter {
		bad("non-voter: a non-voter cannot bootstrap the cluster")
	}
	if c.GossipAddr == "" && len(c.InitialCluster) == 0 && c.Transport == nil {
		bad("gossip-addr: required unless an initial cluster is given")
	}
	if c.ServerStabilization < 0 {
		bad("server-stabilization-time: %v is negative", c.ServerStabilization)
	}
	if c.DeadServerCleanup < 0 {
		bad("dead-server-cleanup: %v is negative", c.DeadServerCleanup)
	}
	if c.DeadServerCleanup > 0 && c.DeadServerCleanup < AddressGrace(c) {
		bad("dead-server-cleanup: %v is below %v (5 × election-timeout): a server would be removed while it may only be slow", c.DeadServerCleanup, AddressGrace(c))
	}
	if c.ReadyMaxLagEntries < 1 {
		bad("ready-max-lag-entries: must be at least 1")
	}
	if c.ReadyMaxLagTime < c.HeartbeatTimeout {
		bad("ready-max-lag-time: %v is below heartbeat-timeout %v: a healthy follower would flap to not ready", c.ReadyMaxLagTime, c.HeartbeatTimeout)
	}
	if c.HeartbeatTimeout < 5*time.Millisecond {
		bad("heartbeat-timeout: %v is below 5ms", c.HeartbeatTimeout)
	}
	if c.ElectionTimeout < c.HeartbeatTimeout {
		bad("election-timeout: %v is below heartbeat-timeout %v", c.ElectionTimeout, c.HeartbeatTimeout)
	}
	if c.LeaderLeaseTimeout <= 0 || c.LeaderLeaseTimeout > c.HeartbeatTimeout {
		bad("leader-lease-timeout: %v must be positive and at most heartbeat-timeout %v", c.LeaderLeaseTimeout, c.HeartbeatTimeout)
	}
	if c.CommitTimeout <= 0 {
		bad("commit-timeout: %v must be positive", c.CommitTimeout)
	}
	if c.MinTTL < 2*c.ElectionTimeout {
		bad("min-ttl: %v is below twice election-timeout (%v): a lease must outlive a leader failover", c.MinTTL, 2*c.ElectionTimeout)
	}
	if c.MaxTTL < c.MinTTL {
		bad("max-ttl: %v is below min-ttl %v", c.MaxTTL, c.MinTTL)
	}
	if c.MaxWait < 0 {
		bad("max-wait: %v is negative", c.MaxWait)
	}
	if c.MaxPending < 1 {
		bad("max-pending: %d must be at least 1", c.MaxPending)
	}
	if c.MaxWaiters < 1 {
		bad("max-waiters: %d must be at least 1", c.MaxWaiters)
	}
	if c.MaxBatch < 2 || c.MaxBatch > 1<<15 {
		bad("max-batch: %d must be between 2 and 32768", c.MaxBatch)
	}
	if c.EventHistory < 1 || c.EventHistory > MaxEventHistory {
		bad("event-history: %d must be between 1 and %d", c.EventHistory, MaxEventHistory)
	}
	if c.BalanceDebounce < 0 || c.BalanceSettle < 0 {
		bad("balance-debounce, balance-settle: negative durations (%v, %v)", c.BalanceDebounce, c.BalanceSettle)
	}
	if c.FreeKeyRetention < 0 {
		bad("free-key-retention: %v is negative (0 keeps free keys for ever)", c.FreeKeyRetention)
	}
	if c.BackupDir != "" && (c.BackupInterval < time.Second || c.BackupInterval > 7*24*time.Hour) {
		bad("backup-interval: %v is outside [1s, 168h]", c.BackupInterval)
	}
	if c.BackupDir != "" && (c.BackupKeep < 1 || c.BackupKeep > 10000) {
		bad("backup-keep: %d is outside [1, 10000]", c.BackupKeep)
	}
	if c.DefaultStuckGrace < placement.MinStuckGrace || c.DefaultStuckGrace > placement.MaxStuckGrace {
		bad("stuck-grace: %v is outside [%v, %v]", c.DefaultStuckGrace, placement.MinStuckGrace, placement.MaxStuckGrace)
	}
	if c.StuckCheck < time.Millisecond || c.StuckCheck > time.Minute {
		bad("stuck-check: %v is outside [1ms, 1m]", c.StuckCheck)
	}
	if c.LoadHalfLife < time.Millisecond || c.LoadHalfLife > time.Hour {
		bad("LoadHalfLife: %v is outside [1ms, 1h]", c.LoadHalfLife)
	}
	if err := c.ValidateRaftAuth(); err != nil {
		errs = append(errs, err)
	}
	if c.ACLDefaultPolicy != acl.Deny && c.ACLDefaultPolicy != acl.Allow {
		bad("acl-default-policy: %q is neither %q nor %q", c.ACLDefaultPolicy, acl.Deny, acl.Allow)
	}
	if c.SnapshotInterval < 5*time.Millisecond {
		bad("snapshot-interval: %v is below 5ms", c.SnapshotInterval)
	}
	if c.SnapshotThreshold < 1 {
		bad("snapshot-threshold: must be at least 1")
	}
	if err := c.Conns.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.Clock == nil {
		bad("clock: required")
	}
	if c.Logger == nil {
		bad("logger: required")
	}
	return errors.Join(errs...)
}

// ValidateRaftAuth refuses ACLs on a Raft port that authenticates nobody:
// with ACLEnabled, Raft must run over mutual TLS (TLS set) or over the
// caller's Transport (no port of Raft's own). A plain Raft port takes one
// forged AppendEntries of a newer term from anyone who reaches it, and
// the cluster commits whatever it carries: a lease, or a management token
// (docs/adr/0027-acls-need-authenticated-raft.md). The error wraps
// ErrACLsNeedAuthenticatedRaft. Builds with tenure_unsafe_plainraft (a
// negative control, never a release) skip the check.
func (c Config) ValidateRaftAuth() error {
	if !c.ACLEnabled || c.TLS.Enabled() || c.Transport != nil || plainRaftACLs {
		return nil
	}
	return fmt.Errorf("acl-enabled: %w: Raft would listen on plain TCP at %s, where one forged request of anyone who reaches it writes any entry, tokens included; set TLS (a server certificate, its key and the CA: Raft over mutual TLS)", ErrACLsNeedAuthenticatedRaft, c.RaftAddr)
}

// Voters is the configured size of the cluster: how many voters the
// leader keeps without an operator. It is BootstrapExpect, or the number
// of servers of InitialCluster; 0 when neither is set (a server that
// joined a running cluster), and then a leader never promotes a server on
// its own and sizes dead-server cleanup on the voters it has. An operator
// may promote more voters (Node.PromoteServer).
func (c Config) Voters() int {
	if c.BootstrapExpect > 0 {
		return c.BootstrapExpect
	}
	return len(c.InitialCluster)
}

// AddressGrace is how long the leader must have been out of contact with a
// server at its configured address before gossip may move it to another
// address: a few election timeouts, so that a server that merely missed a
// few heartbeats keeps its address.
func AddressGrace(c Config) time.Duration { return 5 * c.ElectionTimeout }

// HandoverTimeout is how long Handover waits for a new leader by default:
// a few election timeouts, enough for the target to catch up and win its
// election, short enough that a stopping server does not hang.
func (c Config) HandoverTimeout() time.Duration {
	return max(3*c.ElectionTimeout, time.Second)
}

// Hooks are the settings of a Config that only the tests of package
// cluster set (through its export_test.go); a Config built outside has
// none.
type Hooks struct {
	// WrapLogStore, if set, wraps the Raft log store (tests inject disk
	// faults).
	WrapLogStore func(raft.LogStore) raft.LogStore
	// WrapSnapshotStore, if set, wraps the Raft snapshot store (tests
	// inject failed snapshot writes).
	WrapSnapshotStore func(raft.SnapshotStore) raft.SnapshotStore
	// FreeKeySweep is how often the leader looks for records to forget;
	// 0 derives it from FreeKeyRetention (a tenth, between 10ms and a
	// minute).
	FreeKeySweep time.Duration
}

// TestHooks returns the hooks of c, to read or set.
func TestHooks(c *Config) *Hooks { return &c.hooks }

// Bounds of Config.EventHistory.
const (
	DefaultEventHistory = 10000
	MaxEventHistory     = 10_000_000
)

// Default readiness bounds (Config.ReadyMaxLagEntries, ReadyMaxLagTime).
const (
	DefaultReadyMaxLagEntries = 1000
	DefaultReadyMaxLagTime    = 5 * time.Second
)
