//go:build linux

package sidebyside

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/jepsen/netns"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
)

// Arm is one system and one way of writing.
type Arm struct {
	Name   string // "a", "b", ...: as in the results
	Label  string // "etcd 3.6.16 Mutex, store unfenced"
	System string // "etcd" or "tenure"
	Bin    string // the server binary
	// Fence is how the agents fence their writes: "" (not at all),
	// "write" (the write's transaction checks the token) or "read-write"
	// (the token is also recorded before the read).
	Fence string
}

// Config is one run of the arms: each arm gets a fresh network, fresh
// servers and a fresh database, and the same seed.
type Config struct {
	Arms     []Arm
	Agent    string        // the lockagent binary
	Seed     uint64        // of the nemesis's choices
	Duration time.Duration // the agents' run in each arm
	Agents   int           // how many agents contend for the lock
	TTL      time.Duration // the lock's TTL (whole seconds, for etcd)
	// PauseProb is the chance that the nemesis pauses an agent when it
	// says it is about to write; Pause is how long (past the TTL).
	PauseProb float64
	Pause     time.Duration
	// CutEvery is the mean time between two cuts of an agent from every
	// lock server (each for Pause); 0 for none.
	CutEvery time.Duration
	Dir      string // data and logs, one folder per arm
	Log      hclog.Logger
}

// Result is one arm's outcome.
type Result struct {
	Arm       Arm
	Anomalies Anomalies
	// The agents' own counts: writes the fence refused, holdings lost
	// before the write (the lock client noticed), failures.
	Refused, LostLock, Failed int
	// What the nemesis did.
	Pauses, Cuts int
}

const (
	portClient = 2379 // etcd's client port, tenure's HTTP port
	portPeer   = 2380 // etcd's peer port, tenure's Raft port
	portGossip = 2381 // tenure's gossip
	portDB     = 5432
)

// Run runs every arm in turn.
func Run(ctx context.Context, cfg Config) ([]Result, error) {
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	if _, err := netns.Sweep("sbs", cfg.Log); err != nil {
		return nil, err
	}
	var out []Result
	for i, arm := range cfg.Arms {
		r, err := runArm(ctx, cfg, i, arm)
		if err != nil {
			return out, fmt.Errorf("arm %s (%s): %w", arm.Name, arm.Label, err)
		}
		cfg.Log.Info("arm done", "arm", arm.Name, "label", arm.Label, "anomalies", r.Anomalies.String(),
			"refused", r.Refused, "lost_lock", r.LostLock, "failed", r.Failed, "pauses", r.Pauses, "cuts", r.Cuts)
		out = append(out, r)
	}
	return out, nil
}

// world is one arm's network and processes.
type world struct {
	cfg     Config
	arm     Arm
	dir     string
	net     *netns.Net
	servers []string
	agents  []string
	tmp     []string // removed by close
	mu      sync.Mutex
	procs   []*proc
}

// proc is a started process; done closes once Wait has returned.
type proc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func runArm(ctx context.Context, cfg Config, i int, arm Arm) (res Result, err error) {
	res.Arm = arm
	w := &world{cfg: cfg, arm: arm, dir: filepath.Join(cfg.Dir, arm.Name)}
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return res, err
	}
	w.servers = []string{"s1", "s2", "s3"}
	for k := 1; k <= cfg.Agents; k++ {
		w.agents = append(w.agents, fmt.Sprintf("c%d", k))
	}
	nodes := append(append(append([]string{}, w.servers...), "db"), w.agents...)
	w.net, err = netns.Setup(netns.Config{Prefix: fmt.Sprintf("sbs%d-%d", os.Getpid(), i), Subnet: fmt.Sprintf("10.203.%d", 10+i),
		Nodes: nodes, Log: cfg.Log.Named("net")})
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, w.close()) }()
	db, err := w.startPostgres(ctx)
	if err != nil {
		return res, fmt.Errorf("postgres: %w", err)
	}
	defer db.Close()
	if err := w.startServers(ctx); err != nil {
		return res, err
	}
	agents, err := w.runAgents(ctx, &res)
	if err != nil {
		return res, err
	}
	for _, a := range agents {
		res.Refused += a.Refused
		res.LostLock += a.Lost
		res.Failed += a.Failed
	}
	rows, final, err := readHistory(ctx, db)
	if err != nil {
		return res, err
	}
	res.Anomalies = Check(rows, final)
	return res, nil
}

// start starts cmd with its output in the arm's log file name.
func (w *world) start(cmd *exec.Cmd, name string) error {
	f, err := os.Create(filepath.Join(w.dir, name+".log"))
	if err != nil {
		return err
	}
	if cmd.Stdout == nil {
		cmd.Stdout = f
	}
	cmd.Stderr = f
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{cmd: cmd, done: make(chan struct{})}
	w.mu.Lock()
	w.procs = append(w.procs, p)
	w.mu.Unlock()
	go func() {
		cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return nil
}

// close stops every process by its pid (SIGCONT first: a paused one must
// run to die of SIGTERM), then the network.
func (w *world) close() error {
	w.mu.Lock()
	procs := w.procs
	w.mu.Unlock()
	for _, p := range procs {
		p.cmd.Process.Signal(syscall.SIGCONT)
		p.cmd.Process.Signal(syscall.SIGTERM)
	}
	deadline := time.After(5 * time.Second)
	for _, p := range procs {
		select {
		case <-p.done:
		case <-deadline:
			p.cmd.Process.Kill()
			<-p.done
		}
	}
	err := w.net.Close()
	for _, d := range w.tmp {
		err = errors.Join(err, os.RemoveAll(d))
	}
	return err
}

// startPostgres runs a PostgreSQL server in the db namespace as the
// package's user and returns a connection to it from the hub.
func (w *world) startPostgres(ctx context.Context) (*sql.DB, error) {
	addr := w.net.Addr("db")
	pg, err := harness.InitPostgres(addr[:strings.LastIndexByte(addr, '.')] + ".0/24")
	if err != nil {
		return nil, err
	}
	w.tmp = append(w.tmp, pg.Dir)
	if pg.Cred == nil {
		return nil, errors.New("the store runs as user postgres, which needs root")
	}
	// In the db namespace, as the package's user (ip netns exec runs as
	// root; setpriv drops to postgres).
	args := append([]string{fmt.Sprintf("--reuid=%d", pg.Cred.Uid), fmt.Sprintf("--regid=%d", pg.Cred.Gid), "--clear-groups",
		filepath.Join(pg.Bin, "postgres")}, pg.ServerArgs(addr, portDB)...)
	if err := w.start(w.net.Command("db", "setpriv", args...), "postgres"); err != nil {
		return nil, err
	}
	pc, err := pgx.ParseConfig(w.dsn())
	if err != nil {
		return nil, err
	}
	pc.DialFunc = w.net.DialContext
	db := stdlib.OpenDB(*pc)
	if err := waitFor(ctx, 30*time.Second, func(ctx context.Context) error { return db.PingContext(ctx) }); err != nil {
		db.Close()
		return nil, err
	}
	for _, stmt := range []string{
		`CREATE TABLE counter (id INT PRIMARY KEY, value BIGINT NOT NULL)`,
		`INSERT INTO counter VALUES (1, 0)`,
		`CREATE TABLE history (seq BIGSERIAL PRIMARY KEY, agent TEXT NOT NULL, op BIGINT NOT NULL,
			token BIGINT NOT NULL, read BIGINT NOT NULL, wrote BIGINT NOT NULL)`,
		`CREATE TABLE tenure_fence (resource TEXT PRIMARY KEY, token BIGINT NOT NULL)`,
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			db.Close()
			return nil, fmt.Errorf("%s: %w", stmt, err)
		}
	}
	return db, nil
}

func (w *world) dsn() string {
	return fmt.Sprintf("postgres://tenure@%s:%d/postgres?sslmode=disable", w.net.Addr("db"), portDB)
}

// startServers starts three servers of the arm's system and waits until
// they serve.
func (w *world) startServers(ctx context.Context) error {
	var cluster, join []string
	for _, s := range w.servers {
		cluster = append(cluster, fmt.Sprintf("%s=http://%s:%d", s, w.net.Addr(s), portPeer))
		join = append(join, fmt.Sprintf("%s:%d", w.net.Addr(s), portGossip))
	}
	for _, s := range w.servers {
		addr := w.net.Addr(s)
		data := filepath.Join(w.dir, s)
		var args []string
		switch w.arm.System {
		case "etcd":
			args = []string{"--name", s, "--data-dir", data,
				"--listen-client-urls", fmt.Sprintf("http://%s:%d", addr, portClient),
				"--advertise-client-urls", fmt.Sprintf("http://%s:%d", addr, portClient),
				"--listen-peer-urls", fmt.Sprintf("http://%s:%d", addr, portPeer),
				"--initial-advertise-peer-urls", fmt.Sprintf("http://%s:%d", addr, portPeer),
				"--initial-cluster", strings.Join(cluster, ","), "--initial-cluster-state", "new",
				"--initial-cluster-token", "sbs"}
		case "tenure":
			var others []string
			for _, j := range join {
				if !strings.HasPrefix(j, addr+":") {
					others = append(others, j)
				}
			}
			args = []string{"server", "-node-id", s, "-data-dir", data,
				"-http-addr", fmt.Sprintf("%s:%d", addr, portClient),
				"-raft-addr", fmt.Sprintf("%s:%d", addr, portPeer),
				"-gossip-addr", fmt.Sprintf("%s:%d", addr, portGossip),
				"-bootstrap-expect", "3", "-join", strings.Join(others, ",")}
		default:
			return fmt.Errorf("system %q: want etcd or tenure", w.arm.System)
		}
		if err := w.start(w.net.Command(s, w.arm.Bin, args...), s); err != nil {
			return err
		}
	}
	var probe func(ctx context.Context) error
	switch w.arm.System {
	case "etcd":
		cli, err := clientv3.New(clientv3.Config{Endpoints: w.endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop(),
			DialOptions: []grpc.DialOption{grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
				return w.net.DialContext(ctx, "tcp", addr)
			})}})
		if err != nil {
			return err
		}
		defer cli.Close()
		probe = func(ctx context.Context) error {
			_, err := cli.Put(ctx, "sbs/ready", "1")
			return err
		}
	case "tenure":
		hc := w.net.HTTPClient(2 * time.Second)
		probe = func(ctx context.Context) error {
			for _, e := range w.endpoints() {
				req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+e+"/readyz", nil)
				resp, err := hc.Do(req)
				if err != nil {
					return err
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					return fmt.Errorf("%s: /readyz %d", e, resp.StatusCode)
				}
			}
			return nil
		}
	}
	if err := waitFor(ctx, 60*time.Second, probe); err != nil {
		return fmt.Errorf("%s servers: %w", w.arm.System, err)
	}
	return nil
}

func (w *world) endpoints() []string {
	var out []string
	for _, s := range w.servers {
		out = append(out, fmt.Sprintf("%s:%d", w.net.Addr(s), portClient))
	}
	return out
}

// runAgents starts the agents, runs the nemesis while they run, and
// returns their reports. The nemesis's choices come from the seed alone:
// whether agent k's n-th write is paused is the same in every arm, and so
// are the times and victims of the cuts; what the agents are doing when
// a cut comes depends on timing.
func (w *world) runAgents(ctx context.Context, res *Result) ([]AgentLine, error) {
	var nemMu sync.Mutex // guards res's counts
	reports := make([]AgentLine, len(w.agents))
	var wg sync.WaitGroup
	for k, a := range w.agents {
		args := []string{"-system", w.arm.System, "-endpoints", strings.Join(w.endpoints(), ","), "-db", w.dsn(),
			"-id", "agent-" + a, "-ttl", w.cfg.TTL.String(), "-duration", w.cfg.Duration.String(), "-sync"}
		if w.arm.Fence != "" {
			args = append(args, "-fence", w.arm.Fence)
		}
		cmd := w.net.Command(a, w.cfg.Agent, args...)
		// Pipes of our own, not StdoutPipe: Wait (in start) would close
		// that one at exit, maybe before the last line is read.
		out, pw, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		word, in, err := os.Pipe()
		if err != nil {
			out.Close()
			pw.Close()
			return nil, err
		}
		cmd.Stdout, cmd.Stdin = pw, word
		err = w.start(cmd, a)
		pw.Close()
		word.Close()
		if err != nil {
			out.Close()
			in.Close()
			return nil, err
		}
		rng := rand.New(rand.NewPCG(w.cfg.Seed, uint64(k)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer out.Close()
			defer in.Close()
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				var ev AgentLine
				if json.Unmarshal(sc.Bytes(), &ev) != nil {
					continue
				}
				switch ev.Ev {
				case "writing":
					if rng.Float64() < w.cfg.PauseProb {
						nemMu.Lock()
						res.Pauses++
						nemMu.Unlock()
						// Stopped before it hears the word: the pause lands
						// between its lock check and its write.
						cmd.Process.Signal(syscall.SIGSTOP)
						time.AfterFunc(w.cfg.Pause, func() { cmd.Process.Signal(syscall.SIGCONT) })
					}
					io.WriteString(in, "go\n")
				case "done":
					reports[k] = ev
				}
			}
		}()
	}
	stop := make(chan struct{})
	var cutter sync.WaitGroup
	if w.cfg.CutEvery > 0 {
		cutter.Add(1)
		go func() {
			defer cutter.Done()
			rng := rand.New(rand.NewPCG(w.cfg.Seed, 1<<32))
			for {
				wait := time.Duration(rng.Int64N(int64(2 * w.cfg.CutEvery)))
				victim := w.agents[rng.IntN(len(w.agents))]
				select {
				case <-stop:
					return
				case <-time.After(wait):
				}
				var errs []error
				for _, s := range w.servers {
					errs = append(errs, w.net.Block(victim, s))
				}
				nemMu.Lock()
				res.Cuts++
				nemMu.Unlock()
				w.cfg.Log.Debug("cut", "agent", victim, "error", errors.Join(errs...))
				select {
				case <-stop:
				case <-time.After(w.cfg.Pause):
				}
				if err := w.net.Heal(); err != nil {
					w.cfg.Log.Warn("heal", "error", err)
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	limit := w.cfg.Duration + w.cfg.Pause + 30*time.Second
	var err error
	select {
	case <-done:
	case <-time.After(limit):
		err = fmt.Errorf("the agents did not finish within %v", limit)
	case <-ctx.Done():
		err = ctx.Err()
	}
	close(stop)
	cutter.Wait()
	if err != nil {
		return nil, err
	}
	if err := w.net.Heal(); err != nil {
		return nil, err
	}
	for k, r := range reports {
		if r.Ev != "done" {
			return nil, fmt.Errorf("agent %s ended without its report (see %s)", w.agents[k], filepath.Join(w.dir, w.agents[k]+".log"))
		}
	}
	return reports, nil
}

// readHistory reads the store's history and the counter.
func readHistory(ctx context.Context, db *sql.DB) ([]Row, int64, error) {
	var final int64
	if err := db.QueryRowContext(ctx, `SELECT value FROM counter WHERE id = 1`).Scan(&final); err != nil {
		return nil, 0, err
	}
	q, err := db.QueryContext(ctx, `SELECT seq, agent, op, token, read, wrote FROM history ORDER BY seq`)
	if err != nil {
		return nil, 0, err
	}
	defer q.Close()
	var rows []Row
	for q.Next() {
		var r Row
		var token int64
		if err := q.Scan(&r.Seq, &r.Agent, &r.Op, &token, &r.Read, &r.Wrote); err != nil {
			return nil, 0, err
		}
		r.Token = uint64(token)
		rows = append(rows, r)
	}
	return rows, final, q.Err()
}

// waitFor calls probe until it succeeds or limit passes.
func waitFor(ctx context.Context, limit time.Duration, probe func(context.Context) error) error {
	deadline := time.Now().Add(limit)
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := probe(pctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("not ready within %v: %w", limit, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
