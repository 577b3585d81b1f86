package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	gometrics "github.com/hashicorp/go-metrics/compat"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/httpapi"
)

// serverSettings are the settings of `tenure server`, filled from defaults,
// then a config file, then TENURE_* environment variables, then flags.
type serverSettings struct {
	cluster  cluster.Config
	join     string
	initial  string
	logFlags logOutput
	config   string
	// dev: one server for trying tenure and for application tests, its
	// state in memory and gone at exit (devDataDir).
	dev bool
	// metricsOpen serves /metrics without a token while ACLs are on.
	metricsOpen bool
	// http bounds the HTTP API's connections; its WriteTimeout follows
	// -max-wait.
	http httpapi.ConnLimits
	// maxActive and maxQueueWait are httpapi.Config's MaxActive and
	// MaxQueueWait.
	maxActive    int
	maxQueueWait time.Duration
}

func serverFlags(s *serverSettings) *flag.FlagSet {
	c := &s.cluster
	fs := flag.NewFlagSet("server", flag.ContinueOnError)
	fs.StringVar(&s.config, "config", "", "JSON config file whose keys are these flags' names")
	fs.BoolVar(&s.dev, "dev", false, "one server that elects itself at once, its state in memory and gone at exit, its Raft in memory (no Raft port): for trying tenure and for tests, never for production")
	fs.StringVar(&c.NodeID, "node-id", c.NodeID, "unique, stable id of this server (default: hostname)")
	fs.StringVar(&c.DataDir, "data-dir", "", "directory for the Raft log, stable store and snapshots (required)")
	fs.StringVar(&c.HTTPAddr, "http-addr", c.HTTPAddr, "HTTP API address (also announced to peers for forwarding)")
	fs.StringVar(&c.RaftAddr, "raft-addr", c.RaftAddr, "Raft TCP address (bound, and announced unless -raft-advertise; a host name is resolved once, at start)")
	fs.StringVar(&c.RaftAdvertise, "raft-advertise", "", "Raft address announced to the other servers, as given: a DNS name is resolved on each dial (a server back at a new IP under its name is reached at once)")
	fs.StringVar(&c.GossipAddr, "gossip-addr", c.GossipAddr, "memberlist gossip address")
	fs.IntVar(&c.BootstrapExpect, "bootstrap-expect", 0, "bootstrap Raft once this many servers started with the same value see each other")
	fs.StringVar(&s.join, "join", "", "comma-separated gossip addresses of other servers to join")
	fs.BoolVar(&c.NonVoter, "non-voter", false, "join as a non-voting server")
	fs.BoolVar(&c.AllowLostRaftState, "allow-lost-raft-state", false, "DANGER: start although the identity file says this server was a member and its Raft state is gone; remove the server from the cluster first (see docs/operations.md)")
	fs.Var(gossipKeyFlag{&c.GossipKey}, "gossip-key", "base64 key (32 bytes, tenure keygen) that encrypts gossip; seeds the keyring kept in the data dir")
	fs.StringVar(&s.initial, "initial-cluster", "", "static bootstrap instead of gossip: id=raft-addr=http-addr,… for every server")
	fs.StringVar(&c.ClusterName, "cluster-name", c.ClusterName, "name of the cluster (one DNS label): the leader admits to Raft only servers of this name; with TLS, Raft peers must hold a certificate for server.<name>.tenure that names their node id")
	fs.DurationVar(&c.ServerStabilization, "server-stabilization-time", c.ServerStabilization, "how long a new server must stay caught up as a non-voter before the leader promotes it")
	fs.DurationVar(&c.DeadServerCleanup, "dead-server-cleanup", c.DeadServerCleanup, "remove a server dead this long from Raft (voters only while enough remain); 0 never does")
	fs.Uint64Var(&c.MaxCatchUpLag, "max-catch-up-lag", c.MaxCatchUpLag, "log entries a server may trail the leader's commit index and still be promoted")
	fs.Uint64Var(&c.ReadyMaxLagEntries, "ready-max-lag-entries", c.ReadyMaxLagEntries, "entries this server's applied index may trail the leader's commit index before /readyz answers 503")
	fs.DurationVar(&c.ReadyMaxLagTime, "ready-max-lag-time", c.ReadyMaxLagTime, "how long this server's applied index may trail the leader's commit index before /readyz answers 503; also how long a failed raft.db write keeps it not ready (at least heartbeat-timeout)")
	fs.DurationVar(&c.MinTTL, "min-ttl", c.MinTTL, "smallest TTL an acquire may ask for (at least 2 × election-timeout)")
	fs.DurationVar(&c.MaxTTL, "max-ttl", c.MaxTTL, "largest TTL an acquire may ask for")
	fs.DurationVar(&c.MaxWait, "max-wait", c.MaxWait, "longest wait of a blocking acquire")
	fs.IntVar(&c.MaxPending, "max-pending", c.MaxPending, "writes queued on the leader before it answers 429")
	fs.IntVar(&c.MaxWaiters, "max-waiters", c.MaxWaiters, "blocking acquirers queued on the leader before a blocking acquire of a held key answers 429")
	fs.IntVar(&c.MaxBatch, "max-batch", c.MaxBatch, "commands in one Raft log entry")
	fs.IntVar(&c.EventHistory, "event-history", c.EventHistory, "events kept in memory for GET /v1/events (1 to 10000000)")
	fs.DurationVar(&c.BalanceDebounce, "balance-debounce", c.BalanceDebounce, "how long the leader lets worker and group changes settle before placing keys")
	fs.DurationVar(&c.FreeKeyRetention, "free-key-retention", c.FreeKeyRetention, "the leader deletes the record of a key free for this long (keys of groups excepted); 0 keeps records for ever")
	fs.StringVar(&c.BackupDir, "backup-dir", "", "while this server leads, write a backup of the whole state here every -backup-interval (tenure snapshot list reads them)")
	fs.DurationVar(&c.BackupInterval, "backup-interval", c.BackupInterval, "time between two backups to -backup-dir")
	fs.IntVar(&c.BackupKeep, "backup-keep", c.BackupKeep, "how many backups of -backup-dir to keep (the newest)")
	fs.DurationVar(&c.DefaultStuckGrace, "stuck-grace", c.DefaultStuckGrace, "how long a key may stay free while targeted at a live worker before the worker is marked stuck, for groups that set no grace and whose keys never had a lease")
	fs.DurationVar(&c.BalanceSettle, "balance-settle", c.BalanceSettle, "how long a new leader waits for gossip before its first placement")
	fs.DurationVar(&c.HeartbeatTimeout, "heartbeat-timeout", c.HeartbeatTimeout, "Raft heartbeat timeout")
	fs.DurationVar(&c.ElectionTimeout, "election-timeout", c.ElectionTimeout, "Raft election timeout")
	fs.DurationVar(&c.LeaderLeaseTimeout, "leader-lease-timeout", c.LeaderLeaseTimeout, "Raft leader lease timeout")
	fs.DurationVar(&c.CommitTimeout, "commit-timeout", c.CommitTimeout, "Raft commit timeout")
	fs.DurationVar(&c.SnapshotInterval, "snapshot-interval", c.SnapshotInterval, "how often Raft checks whether to snapshot")
	fs.Uint64Var(&c.SnapshotThreshold, "snapshot-threshold", c.SnapshotThreshold, "log entries between snapshots")
	fs.Uint64Var(&c.TrailingLogs, "trailing-logs", c.TrailingLogs, "log entries kept after a snapshot")
	fs.StringVar(&c.TLS.CertFile, "tls-cert-file", "", "PEM certificate of this server, naming its -node-id: the HTTP API serves TLS only (needs -tls-key-file)")
	fs.StringVar(&c.TLS.KeyFile, "tls-key-file", "", "PEM private key of -tls-cert-file")
	fs.StringVar(&c.TLS.CAFile, "tls-ca-file", "", "PEM CA certificate(s): verify client certificates (-tls-verify-incoming) and the leader when forwarding")
	fs.BoolVar(&c.TLS.VerifyIncoming, "tls-verify-incoming", false, "require client certificates signed by -tls-ca-file (mutual TLS)")
	fs.BoolVar(&c.ACLEnabled, "acl-enabled", c.ACLEnabled, "require an ACL token with the right for every request (see tenure acl); needs the TLS flags (Raft over mutual TLS), except with -dev")
	fs.StringVar(&c.ACLDefaultPolicy, "acl-default-policy", c.ACLDefaultPolicy, "what a request without a token may do with ACLs on: deny (nothing) or allow (all but acl)")
	fs.BoolVar(&s.metricsOpen, "metrics-open", false, "serve /metrics without a token when ACLs are on (otherwise it needs the operator right)")
	h := &s.http
	fs.IntVar(&h.MaxConns, "http-max-conns", h.MaxConns, "open HTTP connections; past it a request is answered 503 too_many_connections and its connection closed")
	fs.IntVar(&h.MaxConnsPerClient, "http-max-conns-per-client", h.MaxConnsPerClient, "open HTTP connections of one client IP address")
	fs.DurationVar(&h.ReadTimeout, "http-read-timeout", h.ReadTimeout, "longest time to read a request, body included (a slower sender is cut)")
	fs.DurationVar(&h.IdleTimeout, "http-idle-timeout", h.IdleTimeout, "an idle keep-alive connection is closed after this")
	s.maxActive, s.maxQueueWait = httpapi.DefaultMaxActive(), httpapi.DefaultMaxQueueWait
	fs.IntVar(&s.maxActive, "http-max-active", s.maxActive, "API requests worked on at once (all the leader serves, and stale reads; not blocking queries, status, health or metrics); the rest wait their turn (default: 128 per CPU); 0: no bound")
	fs.DurationVar(&s.maxQueueWait, "http-max-queue-wait", s.maxQueueWait, "longest wait of an API request for its turn before it is answered 429 overloaded with Retry-After")
	connFlags(fs, &c.Conns)
	fs.Var(&s.logFlags.level, "log-level", "`level` of log lines: trace, debug, info, warn or error")
	fs.Var(&s.logFlags.format, "log-format", "`format` of log lines: text (the default) or json (one JSON object per line)")
	fs.BoolVar(&s.logFlags.json, "log-json", false, "deprecated: the same as -log-format json")
	return fs
}

// fdReserve is the file descriptors kept beyond the ports' caps: the data
// files (raft.db, snapshots, logs), the outbound Raft and forwarding
// connections, gossip's UDP socket.
const fdReserve = 256

// connFlags registers the caps of the Raft and gossip ports.
func connFlags(fs *flag.FlagSet, l *cluster.ConnLimits) {
	fs.IntVar(&l.RaftMaxConns, "raft-max-conns", l.RaftMaxConns, "open inbound Raft connections; past it a new one is closed at once (the cluster's servers count only against the cap per address)")
	fs.IntVar(&l.RaftMaxConnsPerClient, "raft-max-conns-per-client", l.RaftMaxConnsPerClient, "open inbound Raft connections of one remote IP address")
	fs.IntVar(&l.GossipMaxConns, "gossip-max-conns", l.GossipMaxConns, "open inbound gossip (TCP) connections; past it a new one is closed at once")
	fs.IntVar(&l.GossipMaxConnsPerClient, "gossip-max-conns-per-client", l.GossipMaxConnsPerClient, "open inbound gossip (TCP) connections of one remote IP address")
	fs.DurationVar(&l.HandshakeTimeout, "raft-handshake-timeout", l.HandshakeTimeout, "an inbound Raft connection must finish its TLS handshake, or send its first bytes, within this")
}

// fdBudget checks that the caps of every port fit in the process's limit
// of open files (RLIMIT_NOFILE), with fdReserve to spare: a flood on one
// port must never take the descriptors another needs. When they do not
// fit and -http-max-conns was left at its default, it lowers the HTTP caps
// to fit and says so in warning; otherwise it refuses, naming the flags to
// lower and the limit to raise.
func fdBudget(s *serverSettings, limit uint64) (warning string, err error) {
	clusterFDs := s.cluster.Conns.FileDescriptors()
	need := uint64(s.http.FileDescriptors() + clusterFDs + fdReserve)
	if need <= limit {
		return "", nil
	}
	if s.http.MaxConns == httpapi.DefaultConnLimits(0).MaxConns && limit > uint64(clusterFDs+fdReserve) {
		avail := int(min(limit-uint64(clusterFDs+fdReserve), 1<<30))
		l := s.http
		for l.MaxConns = avail; l.MaxConns > 0 && l.FileDescriptors() > avail; {
			l.MaxConns -= max(1, (l.FileDescriptors()-avail)/2)
		}
		l.MaxConnsPerClient = min(l.MaxConnsPerClient, l.MaxConns)
		if l.MaxConns >= 64 {
			warning = fmt.Sprintf("the limit of open files (RLIMIT_NOFILE) is %d: -http-max-conns lowered from %d to %d, -http-max-conns-per-client to %d, to leave room for Raft, gossip and the data files; raise the limit (ulimit -n, LimitNOFILE= in systemd) to serve more",
				limit, s.http.MaxConns, l.MaxConns, l.MaxConnsPerClient)
			s.http = l
			return warning, nil
		}
	}
	return "", fmt.Errorf("open files: the connection caps need up to %d file descriptors (HTTP %d from -http-max-conns %d; Raft and gossip %d from -raft-max-conns, -raft-max-conns-per-client, -gossip-max-conns, -gossip-max-conns-per-client; %d for data files and outbound connections), but the limit of open files (RLIMIT_NOFILE) is %d: raise it (ulimit -n, LimitNOFILE= in systemd) or lower the caps",
		need, s.http.FileDescriptors(), s.http.MaxConns, clusterFDs, fdReserve, limit)
}

// checkOpenFiles applies fdBudget to this process's limit of open files.
func checkOpenFiles(s *serverSettings, log hclog.Logger) error {
	limit, err := openFileLimit()
	if err != nil {
		log.Warn("connection caps not checked against the limit of open files", "error", err)
		return nil
	}
	warning, err := fdBudget(s, limit)
	if warning != "" {
		log.Warn(warning)
	}
	return err
}

// serverEnvName is the environment variable of a server flag:
// TENURE_<FLAG>, except for -http-addr, whose TENURE_HTTP_ADDR is the list
// of servers that the CLI and the Go client talk to (client.EnvHTTPAddr):
// a shell that exported it for them must not give a server a list as its
// listen address. The server's is TENURE_SERVER_HTTP_ADDR.
func serverEnvName(flag string) string {
	if flag == "http-addr" {
		return "TENURE_SERVER_HTTP_ADDR"
	}
	return "TENURE_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// loadServerSettings applies defaults, the config file, the environment and
// the flags, in rising precedence.
func loadServerSettings(args []string, env func(string) string) (*serverSettings, error) {
	s := &serverSettings{cluster: cluster.DefaultConfig(), http: httpapi.DefaultConnLimits(0)}
	if host, err := os.Hostname(); err == nil {
		s.cluster.NodeID = host
	}
	fs := serverFlags(s)
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	explicit := map[string]string{}
	fs.Visit(func(f *flag.Flag) { explicit[f.Name] = f.Value.String() })
	s.config = cmp.Or(s.config, env("TENURE_CONFIG"))
	if s.config != "" {
		if err := applyConfigFile(fs, s.config); err != nil {
			return nil, err
		}
	}
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		name := serverEnvName(f.Name)
		if v := env(name); v != "" && f.Name != "config" && envErr == nil {
			if err := fs.Set(f.Name, v); err != nil {
				envErr = fmt.Errorf("%s: %w", name, err)
			}
		}
	})
	if envErr != nil {
		return nil, envErr
	}
	for name, v := range explicit {
		if err := fs.Set(name, v); err != nil {
			return nil, fmt.Errorf("-%s: %w", name, err)
		}
	}
	s.cluster.Join = splitList(s.join)
	peers, err := parseInitialCluster(s.initial)
	if err != nil {
		return nil, err
	}
	s.cluster.InitialCluster = peers
	if s.dev {
		if err := devSettings(s); err != nil {
			return nil, err
		}
	}
	if _, err := s.logFlags.jsonFormat(); err != nil {
		return nil, err
	}
	if err := checkTLSFlags(s.cluster.TLS); err != nil {
		return nil, err
	}
	if err := s.cluster.ValidateRaftAuth(); err != nil {
		return nil, errors.New("-acl-enabled needs Raft over mutual TLS: add -tls-cert-file, -tls-key-file and -tls-ca-file (tenure tls makes them); on plain TCP, one forged Raft request from anyone who reaches -raft-addr writes what it carries, ACL tokens included (-dev needs no TLS for ACLs: its Raft has no port)")
	}
	// An answer may wait for a blocking acquire's or a blocking query's
	// whole wait, plus Raft.
	s.http.WriteTimeout = max(s.cluster.MaxWait, httpapi.DefaultConfig().MaxBlockingWait) + time.Minute
	if err := s.http.Validate(); err != nil {
		return nil, err
	}
	if err := s.cluster.Conns.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// checkTLSFlags checks the relations between the TLS flags, naming them.
func checkTLSFlags(f cluster.TLSFiles) error {
	switch {
	case f.CertFile != "" && f.KeyFile == "":
		return errors.New("-tls-cert-file needs -tls-key-file")
	case f.KeyFile != "" && f.CertFile == "":
		return errors.New("-tls-key-file needs -tls-cert-file")
	case f.VerifyIncoming && !f.Enabled():
		return errors.New("-tls-verify-incoming needs -tls-cert-file and -tls-key-file: TLS is off without them")
	case f.VerifyIncoming && f.CAFile == "":
		return errors.New("-tls-verify-incoming needs -tls-ca-file to verify client certificates against")
	case f.Enabled() && f.CAFile == "":
		return errors.New("-tls-cert-file needs -tls-ca-file: Raft over TLS verifies every peer against it")
	case f.CAFile != "" && !f.Enabled():
		return errors.New("-tls-ca-file is set but TLS is off: give -tls-cert-file and -tls-key-file too")
	}
	return f.Validate()
}

// applyConfigFile sets each flag named by a key of the JSON object in path.
func applyConfigFile(fs *flag.FlagSet, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("config file %s: %w", path, err)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == "config" || fs.Lookup(k) == nil {
			return fmt.Errorf("config file %s: unknown key %q", path, k)
		}
		var v string
		switch x := m[k].(type) {
		case string:
			v = x
		case bool, float64:
			v = fmt.Sprint(x)
		case []any:
			parts := make([]string, len(x))
			for i, p := range x {
				parts[i] = fmt.Sprint(p)
			}
			v = strings.Join(parts, ",")
		default:
			return fmt.Errorf("config file %s: key %q: unsupported value %v", path, k, x)
		}
		if err := fs.Set(k, v); err != nil {
			return fmt.Errorf("config file %s: key %q: %w", path, k, err)
		}
	}
	return nil
}

// splitList splits a comma-separated list, trimming each item and
// dropping the empty ones.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func parseInitialCluster(s string) ([]cluster.Peer, error) {
	var peers []cluster.Peer
	for _, p := range splitList(s) {
		parts := strings.Split(p, "=")
		if len(parts) != 3 {
			return nil, fmt.Errorf("initial-cluster: %q is not id=raft-addr=http-addr", p)
		}
		peers = append(peers, cluster.Peer{ID: parts[0], RaftAddr: parts[1], HTTPAddr: parts[2]})
	}
	return peers, nil
}

// runServer runs `tenure server` until SIGINT or SIGTERM.
func runServer(args []string) int {
	s, err := loadServerSettings(args, os.Getenv)
	if errors.Is(err, flag.ErrHelp) {
		fs := serverFlags(&serverSettings{cluster: cluster.DefaultConfig()})
		fmt.Fprintln(os.Stderr, "usage: tenure server -data-dir DIR [flags]\n\nEvery flag can also be set as TENURE_<FLAG> (e.g. TENURE_DATA_DIR; -http-addr is TENURE_SERVER_HTTP_ADDR) or in -config.")
		fs.SetOutput(os.Stderr)
		fs.PrintDefaults()
		return 0
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "tenure server: %v\n", err)
		return 2
	}
	// The last lines stay in memory too, for GET /v1/debug/logs.
	tail, err := httpapi.NewLogTail(httpapi.DefaultLogTailLines, httpapi.DefaultLogTailBytes)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tenure server: %v\n", err)
		return 1
	}
	log := s.logFlags.logger("tenure", io.MultiWriter(tail, os.Stderr))
	if s.logFlags.json {
		log.Warn("-log-json is deprecated: use -log-format json")
	}
	if s.dev {
		if s.cluster.DataDir, err = devDataDir(); err != nil {
			fmt.Fprintf(os.Stderr, "tenure server: %v\n", err)
			return 1
		}
		defer os.RemoveAll(s.cluster.DataDir)
		log.Warn("dev mode: one server, its state in memory and gone at exit; never for production", "data_dir", s.cluster.DataDir)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, s, log, tail); err != nil {
		if errors.Is(err, cluster.ErrRefusedStart) {
			// The message is for an operator: plain, not a log field.
			fmt.Fprintf(os.Stderr, "tenure server: %v\n", err)
			return exitRefused
		}
		log.Error("server stopped", "error", err)
		return 1
	}
	return 0
}

func serve(ctx context.Context, s *serverSettings, log hclog.Logger, tail *httpapi.LogTail) error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	reg.MustRegister(buildInfo())
	cfg := s.cluster
	if sink, err := cluster.NewGoMetricsSink(reg); err == nil {
		mc := gometrics.DefaultConfig("tenure")
		mc.EnableHostname = false
		mc.EnableRuntimeMetrics = false
		gometrics.NewGlobal(mc, sink)
		cfg.PeerMetrics = sink
	} else {
		log.Warn("raft metrics unavailable", "error", err)
	}
	cfg.Logger = log
	cfg.Registerer = reg
	clock, err := lessorClock(log)
	if err != nil {
		return err
	}
	cfg.Clock = clock
	serverTLS, forwardClient, err := httpsConfig(cfg.TLS, cfg.ClusterName)
	if err != nil {
		return err
	}
	if err := checkOpenFiles(s, log); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return fmt.Errorf("http-addr: %w", err)
	}
	node, err := cluster.New(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	defer node.Shutdown()
	hc := httpapi.DefaultConfig()
	hc.Node, hc.Logger, hc.Gatherer, hc.Registerer = httpapi.NodeOf(node), log, reg, reg
	if serverTLS != nil {
		hc.ForwardClient = forwardClient
		hc.ForwardScheme = "https"
	}
	hc.MetricsOpen = s.metricsOpen
	hc.MaxActive, hc.MaxQueueWait = s.maxActive, s.maxQueueWait
	hc.LogTail = tail
	hc.StreamIdleTimeout = s.http.IdleTimeout
	api, err := httpapi.New(hc)
	if err != nil {
		ln.Close()
		return err
	}
	s.http.Trusted = node.IsServerIP
	ln = httpapi.LimitListener(ln, s.http)
	srv, err := httpapi.NewHTTPServer(api, s.http, log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}))
	if err != nil {
		ln.Close()
		return err
	}
	errCh := make(chan error, 1)
	if serverTLS != nil {
		srv.TLSConfig = serverTLS
		go func() { errCh <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { errCh <- srv.Serve(httpapi.Listener(ln)) }()
	}
	raftAddr := cfg.RaftAddr
	if cfg.Transport != nil {
		raftAddr = devRaftAddr
	}
	log.Info("tenure server started", "node_id", cfg.NodeID, "http_addr", cfg.HTTPAddr, "raft_addr", raftAddr, "gossip_addr", cfg.GossipAddr, "data_dir", cfg.DataDir,
		"tls", cfg.TLS.Enabled(), "tls_verify_incoming", cfg.TLS.VerifyIncoming)
	if cfg.ACLEnabled {
		log.Info("acls enabled", "default_policy", cfg.ACLDefaultPolicy, "metrics_open", s.metricsOpen)
	}
	waitCtx, stopWaiting := context.WithCancel(ctx)
	defer stopWaiting()
	go warnWhileNoLeader(waitCtx, node, cfg, log)
	select {
	case <-ctx.Done():
		log.Info("shutting down")
		handOver(node, cfg.HandoverTimeout(), log)
	case err := <-errCh:
		return fmt.Errorf("http server: %w", err)
	case err := <-node.Failed():
		srv.Close() // the node stopped itself: serve nothing more
		return err
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(shutdownCtx)
	return node.Shutdown()
}

// handOver runs on SIGTERM or SIGINT before the HTTP server and the node
// stop: a leader hands leadership to the most up-to-date voter and waits,
// at most timeout, for the new leader, so that clients fail over in tens
// of milliseconds instead of an election timeout. A follower, or the only
// voter, has nothing to hand over. A failed hand-over is logged and the
// server stops anyway: the others elect a leader as after a crash.
func handOver(node *cluster.Node, timeout time.Duration, log hclog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	start := time.Now()
	if _, err := node.Handover(ctx); err != nil {
		log.Warn("leadership hand-over failed; stopping anyway", "error", err, "waited", time.Since(start).Round(time.Millisecond))
	}
}

// noLeaderWarnAfter is how long a server runs without knowing a leader
// before it says why it waits, and how often it says it again.
const noLeaderWarnAfter = 10 * time.Second

// warnWhileNoLeader logs, every noLeaderWarnAfter while node knows no
// leader, what the server waits for and what would end the wait: a server
// started with none of -bootstrap-expect, -initial-cluster and -join
// waited silently for ever. It returns when ctx ends.
func warnWhileNoLeader(ctx context.Context, node *cluster.Node, cfg cluster.Config, log hclog.Logger) {
	t := time.NewTicker(noLeaderWarnAfter)
	defer t.Stop()
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if st := node.Status(); st.LeaderID == "" {
			log.Warn("no leader yet: "+waitingFor(cfg, len(st.Servers)), "for", time.Since(start).Round(time.Second), "servers_in_raft_configuration", len(st.Servers))
		}
	}
}

// waitingFor says what a server with the settings of cfg, whose Raft
// configuration holds servers, waits for before a leader is elected.
func waitingFor(cfg cluster.Config, servers int) string {
	switch {
	case servers > 0:
		return "a quorum of the voters of the Raft configuration must answer each other (check that the other servers run and that their -raft-addr is reachable; tenure status against one of them)"
	case cfg.BootstrapExpect > 0:
		return fmt.Sprintf("-bootstrap-expect %d: waiting until %d servers started with the same value see each other over gossip (give each the others' gossip addresses with -join)", cfg.BootstrapExpect, cfg.BootstrapExpect)
	case len(cfg.InitialCluster) > 0:
		return "-initial-cluster: waiting for its servers to answer over Raft"
	case len(cfg.Join) > 0:
		return "this server has no Raft state and waits for the cluster it joined over gossip (-join) to admit it; a new cluster needs -bootstrap-expect N on each of its first N servers"
	default:
		return "this server has no Raft state and was started with none of -bootstrap-expect, -initial-cluster and -join, so it waits for a running cluster to add it; to start a cluster, give each of its first N servers -bootstrap-expect N and -join with the others' gossip addresses, or run one server alone with -dev"
	}
}

// revision is the commit the binary was built from, set at build time like
// version: -ldflags "-X main.revision=$(git rev-parse HEAD)" (the Makefile
// does). Without it, the revision Go recorded, if any.
var revision string

// buildInfo is tenure_build_info: 1, with the version that -ldflags set
// (main.version), the Go version and the VCS revision the binary was built
// from ("unknown" when neither -ldflags nor Go recorded one, as with
// -buildvcs=false).
func buildInfo() prometheus.Collector {
	revision := revision
	if bi, ok := debug.ReadBuildInfo(); ok && revision == "" {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				revision = s.Value
			}
		}
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "tenure_build_info",
		Help:        "1, labelled with the version, Go version and VCS revision of this server's binary.",
		ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version(), "revision": cmp.Or(revision, "unknown")},
	})
	g.Set(1)
	return g
}

// gossipKeyFlag reads a base64 gossip key.
type gossipKeyFlag struct{ key *[]byte }

func (f gossipKeyFlag) String() string {
	if f.key == nil || *f.key == nil {
		return ""
	}
	return base64.StdEncoding.EncodeToString(*f.key)
}

func (f gossipKeyFlag) Set(s string) error {
	k, err := cluster.ParseGossipKey(s)
	if err != nil {
		return err
	}
	*f.key = k
	return nil
}

// httpsConfig loads the TLS files: the listener's configuration, and the
// client that forwards to the leader over https with this server's own
// certificate, verifying that the leader holds the server role of
// clusterName and that its certificate names the leader's node id (not
// merely a certificate for the address it gave).
// Both are nil when TLS is off.
func httpsConfig(f cluster.TLSFiles, clusterName string) (*tls.Config, *http.Client, error) {
	if !f.Enabled() {
		return nil, nil, nil
	}
	in, err := cluster.ServerTLSConfig(f)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: %w", err)
	}
	out, err := cluster.ClientTLSConfig(f)
	if err != nil {
		return nil, nil, fmt.Errorf("tls: %w", err)
	}
	forward := httpapi.NewForwardClient(out, func(id string) func(tls.ConnectionState) error {
		if !cluster.ServerIDsChecked() {
			return cluster.VerifyServerConnection(out.RootCAs, clusterName)
		}
		return cluster.VerifyServerIDConnection(out.RootCAs, clusterName, id)
	})
	return in, forward, nil
}
