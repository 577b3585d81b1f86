package jepsen

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/tenure-io/tenure/test/jepsen/history"
	"github.com/tenure-io/tenure/test/jepsen/netns"

	"github.com/tenure-io/tenure/client"
)

// runConfig is one run: a cluster, its workloads, and a fault schedule
// drawn from the seed.
type runConfig struct {
	Name      string
	Seed      uint64
	Servers   int
	Duration  time.Duration // the fault phase
	Nemeses   []string      // the pool the schedule draws from; empty: none
	Workloads []string      // register, mutex, elect, place
	// Build tags of the binaries: negative controls add one deliberate bug.
	ServerTags, AgentTags, StoreTags []string
	// Expect names the checker that must report a violation (a negative
	// control); empty means every checker must pass.
	Expect string
	// Attempts is how many runs, each on the next seed, a negative control
	// whose bug shows only when the workload's operations fall in a short
	// window of the fault gets before its miss is an error (default 1).
	Attempts int
	// MutexKeys are the keys the mutex workers contend for.
	MutexKeys string
	// RegisterProcs is how many operations the register agent keeps in
	// flight at once (default 3).
	RegisterProcs int
	// Stall is the mutex workers' -stall-prob: how often a worker dawdles
	// (1s) between its last check of the lease and its store write, the
	// window in which a pause makes a stale write that only fencing stops.
	// Without stalls a pause lands in the worker's 40ms of work between
	// two checks of its lease, which is what a client that keeps a lease
	// past its deadline gets wrong.
	Stall float64
	// RevokeEvery is the mutex workers' -revoke-every: each revokes a
	// random key (safely, as an operator would) about this often; 0 never.
	RevokeEvery time.Duration
	// PlainRaft runs the servers without TLS (ACLs and the gossip key
	// stay on): only for the negative control whose servers are built
	// with tenure_unsafe_plainraft.
	PlainRaft bool
	Dir       string // results directory of this run
}

// agent roles and how many processes of each a run starts.
var agentCount = map[string]int{"register": 1, "mutex": 2, "elect": 2, "place": 2}

// setupWorld builds the binaries, creates the network and starts the
// servers, the store and the workers.
func setupWorld(ctx context.Context, cfg runConfig, b *builder, log hclog.Logger) (*world, error) {
	serverBin, err := b.build("./cmd/tenure", append([]string{tagClockDrift}, cfg.ServerTags...)...)
	if err != nil {
		return nil, err
	}
	agentBin, err := b.build("./test/jepsen/cmd/jagent", cfg.AgentTags...)
	if err != nil {
		return nil, err
	}
	storeBin, err := b.build("./test/jepsen/cmd/jagent", cfg.StoreTags...)
	if err != nil {
		return nil, err
	}
	w := &world{cfg: cfg, log: log}
	var nodes []string
	for i := 1; i <= cfg.Servers; i++ {
		name := fmt.Sprintf("n%d", i)
		dd := filepath.Join(cfg.Dir, "data", name)
		if err := os.MkdirAll(dd, 0o755); err != nil {
			return nil, err
		}
		w.servers = append(w.servers, &proc{name: name, role: "server", bin: serverBin, dataDir: dd,
			logPath: filepath.Join(cfg.Dir, "logs", name+".log"),
			env:     []string{"TENURE_CLOCK_RATE_FILE=" + filepath.Join(cfg.Dir, "data", name+".rate")}})
		nodes = append(nodes, name)
	}
	w.store = &proc{name: "store", role: "store", bin: storeBin, logPath: filepath.Join(cfg.Dir, "logs", "store.log"),
		history: filepath.Join(cfg.Dir, "history", "store.jsonl")}
	nodes = append(nodes, "store")
	for _, wl := range cfg.Workloads {
		for i := 1; i <= agentCount[wl]; i++ {
			name := fmt.Sprintf("%s%d", wl[:1], i)
			w.agents = append(w.agents, &proc{name: name, role: wl, bin: agentBin,
				logPath: filepath.Join(cfg.Dir, "logs", name+".log"),
				history: filepath.Join(cfg.Dir, "history", name+".jsonl")})
			nodes = append(nodes, name)
		}
	}
	if w.usesAdversary() {
		w.adv.proc = newAdversary(cfg, agentBin)
		nodes = append(nodes, advNode)
	}
	for _, d := range []string{"logs", "history"} {
		if err := os.MkdirAll(filepath.Join(cfg.Dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	pid := os.Getpid()
	w.net, err = netns.Setup(netns.Config{
		Prefix: fmt.Sprintf("%s%d", nsPrefix, pid),
		Subnet: fmt.Sprintf("10.213.%d", pid%250+1),
		Nodes:  nodes,
		Log:    log.Named("netns"),
	})
	if err != nil {
		return nil, err
	}
	servers := map[string]string{}
	for _, sv := range w.servers {
		servers[sv.name] = w.net.Addr(sv.name)
	}
	if w.sec, err = newSecure(filepath.Join(cfg.Dir, "secure"), servers, cfg.PlainRaft); err != nil {
		w.close()
		return nil, fmt.Errorf("security set-up: %w", err)
	}
	if w.adv.proc != nil {
		w.adv.proc.env = w.sec.agentEnv("") // a worker's gossip key and client certificate
	}
	w.http = w.net.HTTPClient(3 * time.Second)
	tc, err := w.sec.clientTLS()
	if err != nil {
		w.close()
		return nil, err
	}
	if tc != nil {
		w.http.Transport.(*http.Transport).TLSClientConfig = tc
	}
	if err := w.net.CheckConnectivity(ctx); err != nil {
		w.close()
		return nil, fmt.Errorf("connectivity check after set-up: %w", err)
	}
	if err := w.mountDisks(); err != nil {
		w.close()
		return nil, err
	}
	if err := w.startAll(ctx); err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// nsPrefix starts the name of every namespace the suite makes; Sweep
// removes those of dead runs.
const nsPrefix = "tnj"

func (w *world) startAll(ctx context.Context) error {
	for _, s := range w.servers {
		s.args = w.serverArgs(s)
		if err := w.startProc(s); err != nil {
			return err
		}
	}
	if err := w.bootstrapACL(ctx, 30*time.Second); err != nil {
		return err
	}
	if err := w.waitReady(ctx, 30*time.Second); err != nil {
		return err
	}
	w.store.args = []string{"store", "-listen", fmt.Sprintf("%s:%d", w.net.Addr("store"), portStore), "-history", w.store.history}
	if err := w.startProc(w.store); err != nil {
		return err
	}
	if w.has("place") {
		if _, err := w.call(ctx, "PUT", w.url(w.servers[0], "/v1/groups/"+placeGroup), map[string]any{"keys": placeKeys()}, nil); err != nil {
			return fmt.Errorf("create group: %w", err)
		}
		// Placed by the loads the place agents report, moving keys for
		// balance every second and at most two keys at once: placement
		// by load and the availability budget under the nemeses.
		if _, err := w.call(ctx, "PUT", w.url(w.servers[0], "/v1/groups/"+placeGroup+"/balance"),
			map[string]any{"by": "load", "move_interval": "1s", "move_budget": 2, "max_moving": 2}, nil); err != nil {
			return fmt.Errorf("balance group: %w", err)
		}
		w.groupCreated = history.Now()
	}
	rng := rand.New(rand.NewPCG(w.cfg.Seed, 7))
	api, err := w.apiClient(w.sec.token)
	if err != nil {
		return err
	}
	for _, a := range w.agents {
		token, err := w.sec.agentToken(ctx, api, a.name)
		if err != nil {
			return err
		}
		a.env = w.sec.agentEnv(token)
		a.args = w.agentArgs(a, rng.Uint64())
		if err := w.startProc(a); err != nil {
			return err
		}
	}
	return nil
}

// apiClient is a Go client of the servers that sends the harness's
// requests: from the hub, over its TLS, with token.
func (w *world) apiClient(token string) (*client.Client, error) {
	cfg := client.DefaultConfig()
	cfg.Addresses = w.serverURLList()
	hc := *w.http  // its transport: the hub's dialer and the run's TLS
	hc.Timeout = 0 // the client bounds its attempts itself
	cfg.HTTPClient = &hc
	cfg.TLS = client.TLSConfig{}
	cfg.Token = token
	cfg.Timeout = 3 * time.Second
	return client.New(cfg)
}

// bootstrapACL takes the cluster's management token as soon as a leader
// can answer (every other request needs a token), and makes the agents'
// policy.
func (w *world) bootstrapACL(ctx context.Context, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		err := w.sec.bootstrap(ctx, w.apiClient)
		if err == nil {
			return nil
		}
		w.log.Debug("acl bootstrap not yet", "error", err)
		select {
		case <-ctx.Done():
			return fmt.Errorf("acl bootstrap: %w", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (w *world) has(workload string) bool {
	for _, a := range w.agents {
		if a.role == workload {
			return true
		}
	}
	return false
}

const placeGroup = "jepsen"

// placePrepare is how long a place agent prepares each key that moves to
// it (a warm hand-off): every planned move under the nemeses is warm.
const placePrepare = 200 * time.Millisecond

func placeKeys() []string {
	var keys []string
	for i := range 6 {
		keys = append(keys, "part-"+strconv.Itoa(i))
	}
	return keys
}

func (w *world) agentArgs(a *proc, seed uint64) []string {
	common := []string{"-servers", w.serverURLs(), "-history", a.history, "-name", a.name, "-seed", strconv.FormatUint(seed, 10)}
	store := fmt.Sprintf("http://%s:%d", w.net.Addr("store"), portStore)
	switch a.role {
	case "register":
		procs := w.cfg.RegisterProcs
		if procs == 0 {
			procs = 3
		}
		return append([]string{"register", "-procs", strconv.Itoa(procs), "-keys", "reg-0,reg-1", "-ttl", registerTTL.String(), "-timeout", "1s"}, common...)
	case "mutex":
		return append([]string{"mutex", "-store", store, "-keys", w.cfg.MutexKeys, "-id", a.name, "-ttl", holderTTL.String(), "-work", "40ms",
			"-stall", "1s", "-stall-prob", strconv.FormatFloat(w.cfg.Stall, 'f', 2, 64),
			"-revoke-every", w.cfg.RevokeEvery.String()}, common...)
	case "elect":
		return append([]string{"elect", "-id", a.name, "-election", "jepsen", "-ttl", holderTTL.String()}, common...)
	case "place":
		var join []string
		for _, s := range w.servers {
			join = append(join, fmt.Sprintf("%s:%d", w.net.Addr(s.name), portGossip))
		}
		addr := w.net.Addr(a.name)
		return append([]string{"place", "-group", placeGroup, "-id", a.name, "-ttl", holderTTL.String(), "-prepare", placePrepare.String(),
			"-gossip-addr", fmt.Sprintf("%s:%d", addr, portWorker), "-join", strings.Join(join, ","),
			"-status-addr", fmt.Sprintf("%s:%d", addr, portStatus)}, common...)
	}
	return nil
}

// close stops every process and removes the network; safe to call twice.
func (w *world) close() error {
	var errs []error
	for _, p := range w.all() {
		if err := p.kill(); err != nil {
			errs = append(errs, err)
		}
	}
	if w.net != nil {
		errs = append(errs, w.net.Close())
	}
	errs = append(errs, w.unmountDisks())
	return errors.Join(errs...)
}
