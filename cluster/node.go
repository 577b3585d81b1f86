package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/tenure-io/tenure/cluster/internal/connlimit"
	"github.com/tenure-io/tenure/cluster/internal/events"
	"github.com/tenure-io/tenure/cluster/internal/identity"
	"github.com/tenure-io/tenure/cluster/internal/lessor"
	"github.com/tenure-io/tenure/cluster/internal/limitedlog"
	"github.com/tenure-io/tenure/cluster/internal/membership"
	metricset "github.com/tenure-io/tenure/cluster/internal/metrics"
	"github.com/tenure-io/tenure/cluster/internal/nodeconfig"
	"github.com/tenure-io/tenure/cluster/internal/placement"
	"github.com/tenure-io/tenure/cluster/internal/raftstore"
	"github.com/tenure-io/tenure/cluster/internal/rounds"
	"github.com/tenure-io/tenure/cluster/internal/transport"
	"github.com/tenure-io/tenure/fsm"
)

// Node is one tenure server: Raft, the lease state machine, and, while it
// leads, the lessor and the proposer. Its methods are safe for concurrent
// use; every blocking one takes a context.
type Node struct {
	cfg     Config
	log     hclog.Logger
	machine *fsm.Machine
	raft    *raft.Raft
	trans   raft.Transport
	store   *raftboltdb.BoltStore
	snaps   *raft.FileSnapshotStore // read by the metrics (metricsSource.Disk)
	lessor  *lessor.Lessor
	verify  *rounds.Verifier
	confirm *rounds.Confirmer
	// httpAddrs are the HTTP addresses servers gave over their Raft
	// ports (transport/addrchannel.go).
	httpAddrs *transport.HTTPAddrs
	inbound   rounds.ConnSet // confirmation connections served (raft_transport.go)
	// applied waits for the state machine to reach an index (applied.go).
	applied appliedIndex
	metrics *metricset.Set
	gossip  *membership.Gossip // nil without gossip

	// contacts is the leader's record of which followers answer Raft.
	contacts *rounds.Contacts
	// disk records the failed writes of the Raft stores; lag follows how
	// far the applied index trails the leader's commit index (Health).
	disk *raftstore.Health
	lag  *rounds.LagTracker
	// snapDisk records the snapshot writes (Create, Write, Close) of the
	// snapshot store: a failed one makes the node not ready until a
	// snapshot succeeds (Health).
	snapDisk *raftstore.Health

	// leading is the proposer of the current established term; nil while
	// this node is not an established leader.
	leading atomic.Pointer[proposer]
	// handingOver is set while Handover transfers leadership: the node
	// serves as if it were not established (handover.go).
	handingOver atomic.Bool
	// handoverCommitted is the number of the lessor's freeze whose
	// Handover entry is committed (0 before any): a LeaderEstablished
	// proposed after that follows it in the log and voids it, so the
	// freeze may end (handover.go).
	handoverCommitted atomic.Uint64
	// leaderMu orders promotion against demotion.
	leaderMu sync.Mutex

	// hadState: the data dir held Raft state at start.
	hadState bool
	// identity is the data dir's identity file as read at start.
	identity Identity

	// raftReady is raft once started, for the listeners' goroutines;
	// raftGate and gossipGate count their connections (nodeconfig/connlimit.go).
	raftReady            atomic.Pointer[raft.Raft]
	raftGate, gossipGate *connlimit.Gate

	// membersChanged is signalled on every gossip membership change.
	membersChanged chan struct{}
	// statusChanged and membersSeen wake blocking status and member
	// reads (statuswatch.go).
	statusChanged, membersSeen broadcast

	// resolver resolves the host names of Raft addresses (IsServerIP).
	resolver transport.HostCache

	// restore holds writes back while a snapshot is restored (restore.go).
	restore restoreGate

	notifyCh   chan bool
	failed     chan error
	shutdownCh chan struct{}
	shutdown   sync.Once
	wg         sync.WaitGroup
}

// New validates cfg, opens the data dir, starts Raft and gossip, and
// bootstraps the cluster when the configuration says so. The node runs until
// Shutdown.
func New(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("invalid config: %w", err)
	}
	if err := checkOwnCertificate(cfg); err != nil {
		return nil, fmt.Errorf("invalid config: %w", err)
	}
	if !cfg.TLS.Enabled() && cfg.Transport == nil {
		cfg.Logger.Named("node").Warn("raft and gossip run without tls: anyone who reaches the gossip and raft ports can join the cluster or take a server's raft slot; set -tls-cert-file, -tls-key-file and -tls-ca-file (docs/production.md)")
	}
	n := &Node{
		cfg:            cfg,
		log:            cfg.Logger.Named("node"),
		machine:        fsm.New(fsm.WithEventHistory(cfg.EventHistory)),
		lessor:         lessor.New(cfg.Clock),
		contacts:       rounds.NewContacts(),
		disk:           raftstore.NewHealth(time.Now),
		snapDisk:       raftstore.NewHealth(time.Now),
		lag:            rounds.NewLagTracker(time.Now),
		notifyCh:       make(chan bool, 8),
		failed:         make(chan error, 1),
		membersChanged: make(chan struct{}, 1),
		shutdownCh:     make(chan struct{}),
	}
	n.metrics = newMetrics(cfg.Registerer, n)
	n.verify = rounds.NewVerifier(func() (uint64, error) { return n.confirm.CheckLeadership(n.raft) },
		func(d time.Duration) { n.metrics.VerifyLatency.Observe(d.Seconds()) })
	if err := n.openRaft(); err != nil {
		// Undo what openRaft started: Raft, the transport it made, the
		// stores.
		if n.raft != nil {
			n.raft.Shutdown().Error()
		}
		n.closeTransportAndStores()
		return nil, err
	}
	n.wg.Add(3)
	go n.recordClusterID(n.identity, time.Second)
	go n.leaderLoop()
	go n.observeRaft()() // registered now, followed in the goroutine
	leaseLog := events.NewLogger(cfg.Logger.Named("leases"), n.machine, n.leadingTerm)
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		leaseLog.Run(n.shutdownCh)
	}()
	if cfg.BackupDir != "" {
		n.wg.Add(1)
		go n.runBackups()
	}
	if cfg.GossipAddr != "" {
		kr, err := membership.LoadKeyring(cfg.DataDir, cfg.GossipKey)
		if err != nil {
			n.Shutdown()
			return nil, err
		}
		if kr == nil {
			n.log.Warn("gossip is not encrypted: start every server and worker with -gossip-key (tenure keygen makes one)")
		}
		prove := cfg.ProveServer
		// With TLS, answersAt is the same handshake at a server's address
		// in the configuration (membership's autopilot.go: a server that
		// answers there is never moved).
		var byTLS func(Member) error
		var answersAt func(id, addr string) error
		if cfg.TLS.Enabled() {
			if byTLS, err = TLSProof(cfg.TLS, cfg.ClusterName); err != nil {
				n.Shutdown()
				return nil, err
			}
			answersAt = func(id, addr string) error {
				return byTLS(Member{Name: id, Status: "alive", Meta: MemberMeta{Role: "server", ID: id, RaftAddr: addr, ClusterName: cfg.ClusterName}})
			}
		}
		switch {
		case prove != nil:
		case byTLS != nil:
			prove = byTLS
		default:
			prove = membership.ClusterNameProof(cfg.ClusterName)
			n.log.Warn("cluster membership is insecure: a server proves it belongs to the cluster by its name alone, so anyone who can reach the gossip port can join as a non-voter", "cluster_name", cfg.ClusterName)
		}
		// Names the members whose gossip memberlist refuses, in its
		// lines about it.
		senders := transport.NewSenders()
		var table atomic.Pointer[membership.Gossip]
		g, err := membership.New(membership.Config{
			Keyring: kr,
			DataDir: cfg.DataDir,
			Addr:    cfg.GossipAddr,
			Join:    cfg.Join,
			Self: MemberMeta{
				Role:            "server",
				ID:              cfg.NodeID,
				RaftAddr:        string(n.trans.LocalAddr()),
				HTTPAddr:        cfg.HTTPAddr,
				BootstrapExpect: cfg.BootstrapExpect,
				NonVoter:        cfg.NonVoter,
				Bootstrapped:    n.hadState || len(cfg.InitialCluster) > 0,
				ClusterName:     cfg.ClusterName,
			},
			Log:           cfg.Logger.Named("gossip"),
			Raft:          n.raft,
			Leading:       func() bool { return n.Ready() == nil },
			Changed:       n.membersChanged,
			Observed:      n.gossipChanged,
			Prove:         prove,
			AnswersAt:     answersAt,
			Contact:       n.contacts.Get,
			Rules:         rulesOf(cfg),
			MovesVoters:   peerIdentity.movesVoters,
			Transport:     gossipTransport(cfg.Conns, n.IsServerIP, &n.gossipGate, senders),
			MemberlistLog: limitedlog.MemberlistLogger(cfg.Logger.Named("gossip"), n.metrics.LogSuppressed.WithLabelValues(limitedlog.SourceMemberlist).Inc, refusedGossipSender(senders, &table)),
		})
		if err != nil {
			n.Shutdown()
			return nil, err
		}
		n.gossip = g
		table.Store(g)
	}
	// Health reads gossip: it is watched once the node is whole.
	n.wg.Add(1)
	go n.watchHealthLoop()
	return n, nil
}

func (n *Node) openRaft() error {
	cfg := n.cfg
	if err := os.MkdirAll(cfg.DataDir, 0o750); err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	ident, err := identity.Claim(cfg.DataDir, cfg.NodeID)
	if err != nil {
		return err
	}
	store, err := raftstore.OpenLogStore(cfg.DataDir, cfg.NodeID)
	if err != nil {
		return err
	}
	n.store = store
	var logStore raft.LogStore = store
	if wrap := nodeconfig.TestHooks(&cfg).WrapLogStore; wrap != nil {
		logStore = wrap(logStore)
	}
	logs, err := raft.NewLogCache(512, raftstore.DeferTruncation(n.disk.LogStore(logStore)))
	if err != nil {
		return fmt.Errorf("log cache: %w", err)
	}
	snaps, err := raft.NewFileSnapshotStoreWithLogger(cfg.DataDir, 3, cfg.Logger.Named("snapshot"))
	if err != nil {
		return fmt.Errorf("snapshot store: %w", err)
	}
	n.snaps = snaps
	var snapStore raft.SnapshotStore = snaps
	if wrap := nodeconfig.TestHooks(&cfg).WrapSnapshotStore; wrap != nil {
		snapStore = wrap(snapStore)
	}
	snapStore = n.snapDisk.SnapshotStore(snapStore)
	n.trans = cfg.Transport
	var dial rounds.Dialer
	if cfg.ConfirmDial != nil {
		dial = func(_ raft.ServerID, addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
			return cfg.ConfirmDial(addr, timeout)
		}
	}
	if n.trans == nil {
		addr, err := resolveTCP(cfg.RaftAddr)
		if err != nil {
			return fmt.Errorf("raft-addr: %w", err)
		}
		var advertise net.Addr = addr
		if cfg.RaftAdvertise != "" {
			advertise = transport.NamedAddr(cfg.RaftAdvertise)
		}
		// The same port carries the confirmation and address channels:
		// ServeConfirm answers their inbound connections, and dial opens
		// outbound ones. The transport's log lines are limited.
		n.trans, dial, n.raftGate, err = transport.New(transport.Config{
			Node: cfg, Trusted: n.IsServerIP, Advertise: advertise, CheckIDs: peerIdentity.checkIDs, Serve: n.ServeConfirm,
			Logger: limitedlog.New(cfg.Logger.Named("transport"), limitedlog.SourceRaftTransport, n.metrics.LogSuppressed.WithLabelValues(limitedlog.SourceRaftTransport).Inc),
		})
		if err != nil {
			return fmt.Errorf("raft transport: %w", err)
		}
	}
	if dial == nil {
		dial = func(raft.ServerID, raft.ServerAddress, time.Duration) (net.Conn, error) {
			return nil, errors.New("no confirmation channel (Config.ConfirmDial is not set)")
		}
	}
	n.confirm = rounds.NewConfirmer(raft.ServerID(cfg.NodeID), dial, rounds.Timeout(cfg.ElectionTimeout), ErrShutdown, cfg.Logger.Named("confirm"))
	n.httpAddrs = transport.NewHTTPAddrs(func(id raft.ServerID, addr raft.ServerAddress) (string, error) {
		return transport.AskHTTPAddr(dial, id, addr, 2*time.Second)
	}, n.statusChanged.fire)
	rc := raft.DefaultConfig()
	rc.LocalID = raft.ServerID(cfg.NodeID)
	rc.HeartbeatTimeout = cfg.HeartbeatTimeout
	rc.ElectionTimeout = cfg.ElectionTimeout
	rc.LeaderLeaseTimeout = cfg.LeaderLeaseTimeout
	rc.CommitTimeout = cfg.CommitTimeout
	rc.SnapshotInterval = cfg.SnapshotInterval
	rc.SnapshotThreshold = cfg.SnapshotThreshold
	rc.TrailingLogs = cfg.TrailingLogs
	rc.NotifyCh = n.notifyCh
	rc.Logger = cfg.Logger.Named("raft")
	if err := raft.ValidateConfig(rc); err != nil {
		return fmt.Errorf("raft config: %w", err)
	}
	if err := raftstore.CheckStableStore(store, store, snaps, cfg.DataDir, cfg.NodeID); err != nil {
		return err
	}
	stable := n.disk.StableStore(raftstore.SealedStable{StableStore: store})
	existing, err := raft.HasExistingState(logs, stable, snapStore)
	if err != nil {
		return fmt.Errorf("read raft state: %w", err)
	}
	n.hadState = existing
	if ident, err = n.checkLostState(ident, stable); err != nil {
		return err
	}
	if err := raftstore.CheckLogStore(store, cfg.DataDir, cfg.NodeID); err != nil {
		return err
	}
	trans, openTransport := rounds.Wrap(n.trans, n.lag, n.contacts, transport.GuardPipeline)
	n.raft, err = raftstore.NewRaft(rc, &checkedFSM{n: n}, logs, stable, snapStore, trans, cfg.DataDir, cfg.NodeID)
	if err != nil {
		return err
	}
	if n.identity, err = n.checkIdentity(ident, logs); err != nil {
		return err
	}
	openTransport() // the Raft state is this cluster's: answer its peers
	n.raftReady.Store(n.raft)
	if !existing && len(cfg.InitialCluster) > 0 {
		var servers []raft.Server
		for _, p := range cfg.InitialCluster {
			servers = append(servers, raft.Server{ID: raft.ServerID(p.ID), Address: raft.ServerAddress(p.RaftAddr)})
		}
		if err := n.raft.BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
			return fmt.Errorf("bootstrap: %w", err)
		}
		n.log.Info("bootstrapped raft", "servers", len(servers))
	}
	return nil
}

// Shutdown stops gossip and Raft and closes the stores. It does not leave
// the Raft configuration: a restarted server rejoins as itself.
func (n *Node) Shutdown() error {
	var err error
	n.shutdown.Do(func() {
		close(n.shutdownCh)
		if n.gossip != nil {
			n.gossip.Shutdown()
		}
		if n.raft != nil {
			err = n.raft.Shutdown().Error()
		}
		n.wg.Wait()
		n.demote()
		if n.confirm != nil {
			n.confirm.Close()
		}
		n.inbound.CloseAll()
		n.closeTransportAndStores()
	})
	return err
}

// closeTransportAndStores closes the Raft transport, if this node made it
// (not Config.Transport), and the stores.
func (n *Node) closeTransportAndStores() {
	if c, ok := n.trans.(interface{ Close() error }); ok && n.cfg.Transport == nil {
		c.Close()
	}
	if n.store != nil {
		n.store.Close()
	}
}

// leaderLoop follows leadership through the ordered NotifyCh: establish on
// gaining it, demote at once on losing it. It ends at Shutdown.
func (n *Node) leaderLoop() {
	defer n.wg.Done()
	stop := func() {}
	defer func() { stop() }()
	for {
		select {
		case <-n.shutdownCh:
			return
		case isLeader := <-n.notifyCh:
			stop()
			n.metrics.LeaderChanges.Inc()
			if !isLeader {
				n.demote()
				n.log.Info("leader_lost", "term", n.raft.CurrentTerm())
				continue
			}
			ctx, cancel := context.WithCancel(context.Background())
			stop = cancel
			n.wg.Add(1)
			go func() {
				defer n.wg.Done()
				n.lead(ctx)
			}()
		}
	}
}

// lead makes this node a serving leader and keeps it one until ctx ends
// (leadership lost): establish, then run the proposer. If the proposer
// stops while the node still leads (a write failed, e.g. during a
// leadership transfer that timed out), the outcome of its last batch is
// unknown: demote, and establish again from a barrier.
func (n *Node) lead(ctx context.Context) {
	for attempt := 0; ctx.Err() == nil; attempt++ {
		p, err := n.establish(ctx)
		if err != nil {
			n.log.Warn("establishing leadership failed", "attempt", attempt, "error", err)
			select {
			case <-ctx.Done():
			case <-time.After(n.cfg.HeartbeatTimeout):
			}
			continue
		}
		if p == nil {
			return // demoted meanwhile
		}
		bctx, stopBalancer := context.WithCancel(ctx)
		b := n.newBalancer(p)
		balanced := make(chan struct{})
		go func() {
			defer close(balanced)
			b.Run(bctx)
		}()
		swept := make(chan struct{})
		go func() {
			defer close(swept)
			if keep := n.cfg.FreeKeyRetention; keep > 0 {
				n.sweepFreeKeys(bctx, p, keep)
			}
		}()
		p.run(ctx, n.cfg.Clock)
		stopBalancer()
		<-balanced
		<-swept
		if ctx.Err() != nil {
			return
		}
		n.log.Warn("proposer stopped while this node still leads; establishing again")
		n.demote()
	}
}

// establish: Barrier (everything of older terms is applied),
// LeaderEstablished{term} through the log, then promote every held lease to
// a full TTL from now, or to the time it had left when the previous leader
// handed over, if nothing has led since (handover.go). Only then are renewals, acquisitions and expiry
// served, by the returned proposer. It returns nil, nil when ctx ended.
func (n *Node) establish(ctx context.Context) (*proposer, error) {
	if !n.awaitRestore(ctx) {
		return nil, nil
	}
	start := time.Now()
	if err := n.futureError(n.raft.Barrier(0)); err != nil {
		return nil, fmt.Errorf("barrier: %w", err)
	}
	barrier := time.Since(start)
	term := n.raft.CurrentTerm()
	// A previous leader's hand-over, if nothing has led since it: read
	// before this leader's LeaderEstablished, which forgets it.
	handed := n.machine.PendingHandover()
	voids := n.handoverCommitted.Load() // this node's own Handover, committed: it precedes this entry
	if _, err := n.applyCommand(fsm.LeaderEstablished{Term: term}); err != nil {
		return nil, fmt.Errorf("apply leader established: %w", err)
	}
	if voids != 0 {
		n.lessor.UnfreezeIf(voids)
	}
	committed := time.Since(start)
	if err := n.nameCluster(); err != nil {
		return nil, err
	}
	if err := n.keyBackups(); err != nil {
		return nil, err
	}
	n.leaderMu.Lock()
	defer n.leaderMu.Unlock()
	if ctx.Err() != nil {
		return nil, nil
	}
	held := n.machine.Held()
	listed := time.Since(start)
	carried := n.lessor.Promote(held, handed)
	p := newProposer(&proposer{
		apply:      n.applyCommand,
		machine:    n.machine,
		lessor:     n.lessor,
		log:        n.cfg.Logger.Named("proposer"),
		metrics:    n.metrics,
		term:       term,
		maxBatch:   n.cfg.MaxBatch,
		maxPending: n.cfg.MaxPending,
		maxWaiters: n.cfg.MaxWaiters,
		stuck:      placement.NewTracker(n.cfg.Clock, n.cfg.DefaultStuckGrace),
		loads:      placement.NewLoads(n.cfg.Clock, n.cfg.LoadHalfLife),
	})
	n.leading.Store(p)
	n.statusChanged.fire()
	// How long this leader took to serve, by step (the failover time a
	// holder sees is the election plus this).
	n.log.Info("leader_established", "term", term, "leases", n.lessor.Len(), "handed_over", carried,
		"barrier", barrier, "established_committed", committed, "held_listed", listed, "promoted", time.Since(start))
	return p, nil
}

// demote stops serving as leader at once: no renewal, acquisition or expiry
// from here on.
func (n *Node) demote() {
	n.leaderMu.Lock()
	defer n.leaderMu.Unlock()
	n.leading.Store(nil)
	n.lessor.Demote()
	n.statusChanged.fire()
}
