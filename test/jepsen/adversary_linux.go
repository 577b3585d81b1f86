package jepsen

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/fsm"
	"github.com/tenure-io/tenure/test/jepsen/check"
	"github.com/tenure-io/tenure/test/jepsen/history"
)

// The adversary: a process that holds what a worker holds (the gossip
// key, a client certificate, an agent's token) and nothing of a server's,
// in a namespace of its own (advNode), attacking the cluster while the
// workloads run. Each attack is a nemesis; what it must never achieve is
// checked while it runs and judged by resAdversary.
var adversaryNemeses = []string{"forged-voter", "forged-forwarder", "forged-append"}

// restoreNemeses step the cluster back in time: a run that uses them
// checks what a restore keeps (see oldRestore).
var restoreNemeses = []string{"old-restore"}

// advNode is the adversary's namespace.
const advNode = "x1"

// resAdversary names the check that no attack achieved anything;
// resAdversaryMet the check that each attack had its chance (the cluster
// saw it), without which the first proves nothing.
const (
	resAdversary    = "adversary: no attack and no old restore achieves anything"
	resAdversaryMet = "nemesis: every attack reached the cluster"
)

// adversary is what the attacks saw during a run.
type adversary struct {
	proc *proc // jagent forge; nil when the run has no attack

	mu      sync.Mutex
	attacks []attack
}

// attack is one attack: whether the cluster met it (the effect that shows
// the attack was not a no-op), and what it achieved that it must not.
type attack struct {
	nemesis, desc string
	met           bool
	achieved      []string
}

func (w *world) usesAdversary() bool {
	return slices.ContainsFunc(w.cfg.Nemeses, func(n string) bool { return slices.Contains(adversaryNemeses, n) })
}

// forgeArgs are the flags of a forge process announcing server id, with
// its Raft and HTTP ports relayed to the given addresses ("" for none).
func (w *world) forgeArgs(id, raftTo, httpTo string) []string {
	var join []string
	for _, s := range w.servers {
		join = append(join, fmt.Sprintf("%s:%d", w.net.Addr(s.name), portGossip))
	}
	addr := w.net.Addr(advNode)
	args := []string{"forge", "-name", advNode, "-history", w.adv.proc.history, "-id", id,
		"-gossip-addr", fmt.Sprintf("%s:%d", addr, portWorker), "-join", strings.Join(join, ","),
		"-expect", strconv.Itoa(len(w.servers))}
	if raftTo != "" {
		args = append(args, "-raft-addr", fmt.Sprintf("%s:%d", addr, portRaft), "-raft-to", raftTo)
	}
	if httpTo != "" {
		args = append(args, "-http-addr", fmt.Sprintf("%s:%d", addr, portHTTP), "-http-to", httpTo)
	}
	return args
}

// startForge starts the adversary with args; stop ends it.
func (w *world) startForge(args []string) (stop func() error, err error) {
	p := w.adv.proc
	p.args = args
	if err := w.startProc(p); err != nil {
		return nil, err
	}
	return func() error { return p.stop(5 * time.Second) }, nil
}

// forgedConns counts the connections the adversary accepted at its
// forged addresses since mono time from, by kind (raft, http).
func (w *world) forgedConns(from int64) (map[string]int, error) {
	evs, err := history.ReadFile(w.adv.proc.history)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	for _, e := range evs {
		if e.Kind == history.Forged && e.T >= from {
			out[e.F]++
		}
	}
	return out, nil
}

// watchConfigurations polls every running server's Raft configuration
// until ctx ends, and reports each entry that puts a server at one of the
// adversary's addresses.
func (w *world) watchConfigurations(ctx context.Context, found func(string)) {
	adv := w.net.Addr(advNode) + ":"
	seen := map[string]bool{}
	for {
		w.eachStatus(ctx, func(s *proc, st status) {
			for _, sv := range st.Servers {
				if strings.HasPrefix(sv.RaftAddr, adv) {
					what := fmt.Sprintf("%s's configuration (term %d) has %s as a %s at the adversary's %s", s.name, st.Term, sv.ID, sv.Suffrage, sv.RaftAddr)
					if !seen[what] {
						seen[what] = true
						found(what)
					}
				}
			}
		})
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// forgedVoter: one voter is killed, and the adversary announces itself on
// gossip under that voter's id, its Raft address a relay to another
// server's Raft port, so that a handshake through it meets a real server
// certificate. The leader must never put the dead voter's id (or any id)
// at the adversary's address: with the slot, the relayed server would
// count twice in elections and the real one would be locked out. Met when
// the cluster dialled the forged Raft address (it considered admitting
// it).
func forgedVoter(ctx context.Context, w *world, rng *rand.Rand) (func() error, string, time.Duration, error) {
	l, rest := w.pickLeader(ctx, rng)
	victim := rest[rng.IntN(len(rest))]
	others := w.namesExcept(victim)
	// Relay to a server other than the leader when there is one: the
	// relayed server would then vote twice.
	target := l.name
	for _, o := range others {
		if o != l.name {
			target = o
			break
		}
	}
	if err := victim.kill(); err != nil {
		return nil, "", 0, err
	}
	desc := fmt.Sprintf("SIGKILL %s; forged %s at %s relayed to %s's Raft port", victim.name, victim.name, advNode, target)
	return w.attack(ctx, "forged-voter", desc, w.forgeArgs(victim.name, fmt.Sprintf("%s:%d", w.net.Addr(target), portRaft), ""),
		func(conns map[string]int) bool { return conns["raft"] > 0 },
		func() error { return w.restart(victim) }, between(rng, 8*time.Second, 10*time.Second), nil)
}

// forgedForwarder: the adversary announces the leader's id with an HTTP
// address of its own (a relay to a follower's API, whose certificate is a
// real server's; its Raft address likewise), and the nemesis sends linearizable reads to every
// follower, which forward them to the leader. No forwarded request may
// reach the adversary: it would see the caller's token and could answer
// for the leader. Met when every follower answered at least one read
// during the attack (they forwarded while the forged member was alive).
func forgedForwarder(ctx context.Context, w *world, rng *rand.Rand) (func() error, string, time.Duration, error) {
	l, rest := w.pickLeader(ctx, rng)
	target := rest[rng.IntN(len(rest))]
	desc := fmt.Sprintf("forged %s (the leader) at %s relayed to %s's API; reads sent to %v", l.name, advNode, target.name, names(rest))
	var (
		mu       sync.Mutex
		answered = map[string]bool{}
	)
	probe := func(ctx context.Context) {
		// Gossip needs a moment to spread the forged member.
		if !sleep(ctx, 2*time.Second) {
			return
		}
		for ctx.Err() == nil {
			for _, f := range rest {
				if !f.running() {
					continue
				}
				rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				code, _ := w.call(rctx, http.MethodGet, w.url(f, "/v1/leases?prefix=adversary/"), nil, nil)
				cancel()
				if code == http.StatusOK {
					mu.Lock()
					answered[f.name] = true
					mu.Unlock()
				}
			}
			if !sleep(ctx, 100*time.Millisecond) {
				return
			}
		}
	}
	met := func(conns map[string]int) bool {
		mu.Lock()
		defer mu.Unlock()
		return len(answered) == len(rest)
	}
	// Its Raft address relays to the same follower, so that a proof of
	// the server role made there meets a real server's certificate.
	args := w.forgeArgs(l.name, fmt.Sprintf("%s:%d", w.net.Addr(target.name), portRaft), fmt.Sprintf("%s:%d", w.net.Addr(target.name), portHTTP))
	return w.attack(ctx, "forged-forwarder", desc, args,
		met, nil, between(rng, 6*time.Second, 8*time.Second), probe)
}

// attack starts the adversary with args, watches the servers' Raft
// configurations and runs probe (if any) until the undo, which stops the
// adversary, runs after (if any), and records the attack: whether met
// says the cluster met it, and what it achieved (a forged address in a
// configuration, a forwarded request at its HTTP address).
func (w *world) attack(ctx context.Context, name, desc string, args []string, met func(map[string]int) bool,
	after func() error, hold time.Duration, probe func(context.Context)) (func() error, string, time.Duration, error) {
	from := history.Now()
	stopForge, err := w.startForge(args)
	if err != nil {
		if after != nil {
			err = errors.Join(err, after())
		}
		return nil, "", 0, err
	}
	a := attack{nemesis: name, desc: desc}
	var mu sync.Mutex
	actx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.watchConfigurations(actx, func(s string) { mu.Lock(); a.achieved = append(a.achieved, s); mu.Unlock() })
	}()
	if probe != nil {
		wg.Add(1)
		go func() { defer wg.Done(); probe(actx) }()
	}
	undo := func() error {
		cancel()
		wg.Wait()
		errs := []error{stopForge()}
		conns, err := w.forgedConns(from)
		errs = append(errs, err)
		if n := conns["http"]; n > 0 {
			a.achieved = append(a.achieved, fmt.Sprintf("%d connections reached the forged HTTP address (forwarded requests and their tokens)", n))
		}
		a.met = met(conns)
		if after != nil {
			errs = append(errs, after())
		}
		w.adv.mu.Lock()
		w.adv.attacks = append(w.adv.attacks, a)
		w.adv.mu.Unlock()
		return errors.Join(errs...)
	}
	return undo, desc, hold, nil
}

// adversaryResult judges the run's attacks: none may have achieved
// anything (resAdversary, what the negative controls expect to fail), and
// each must have been met by the cluster (resAdversaryMet: an attack the
// cluster never saw proves nothing).
func adversaryResult(w *world) []check.Result {
	w.adv.mu.Lock()
	defer w.adv.mu.Unlock()
	if len(w.adv.attacks) == 0 {
		return nil
	}
	safe := check.Result{Name: resAdversary, Valid: true, Ops: len(w.adv.attacks)}
	met := check.Result{Name: resAdversaryMet, Valid: true, Ops: len(w.adv.attacks)}
	for _, a := range w.adv.attacks {
		for _, s := range a.achieved {
			safe.Valid = false
			safe.Violations = append(safe.Violations, fmt.Sprintf("%s (%s): %s", a.nemesis, a.desc, s))
		}
		if len(a.achieved) == 0 {
			safe.Notes = append(safe.Notes, fmt.Sprintf("%s (%s): achieved nothing", a.nemesis, a.desc))
		}
		if a.met {
			met.Notes = append(met.Notes, fmt.Sprintf("%s (%s): met", a.nemesis, a.desc))
		} else {
			met.Valid = false
			met.Violations = append(met.Violations, fmt.Sprintf("%s (%s): the cluster never met the attack", a.nemesis, a.desc))
		}
	}
	return []check.Result{safe, met}
}

// newAdversary makes the adversary's process when the run attacks.
func newAdversary(cfg runConfig, agentBin string) *proc {
	return &proc{name: advNode, role: "forge", bin: agentBin,
		logPath: filepath.Join(cfg.Dir, "logs", advNode+".log"),
		history: filepath.Join(cfg.Dir, "history", advNode+".jsonl")}
}

func init() {
	addNemesis(nemesis{name: "forged-voter", minServers: 3, inject: forgedVoter})
	addNemesis(nemesis{name: "forged-forwarder", minServers: 3, inject: forgedForwarder})
	addNemesis(nemesis{name: "forged-append", minServers: 3, inject: forgedAppend})
	addNemesis(nemesis{name: "old-restore", minServers: 1, inject: oldRestore})
}

// forgedAppend: the adversary dials a follower's Raft port from its own
// namespace, with a worker's client certificate when the cluster runs TLS
// (plain TCP otherwise), and sends one AppendEntries of a leader that
// does not exist, in a term far above the cluster's, carrying a lease of
// its own choosing with the follower's commit index moved over it. Raft
// over mutual TLS refuses the handshake; a follower that answers at all
// has let a worker's credentials write its log. Met when the adversary
// reached the Raft port (TCP connected).
func forgedAppend(ctx context.Context, w *world, rng *rand.Rand) (func() error, string, time.Duration, error) {
	_, rest := w.pickLeader(ctx, rng)
	f := rest[rng.IntN(len(rest))]
	a := attack{nemesis: "forged-append", desc: fmt.Sprintf("forged AppendEntries to %s's Raft port from %s", f.name, advNode)}
	a.met, a.achieved = w.sendForgedAppend(ctx, f)
	undo := func() error {
		// By now the forged entry, had it been taken, is applied.
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		a.achieved = append(a.achieved, w.forgedLeases(cctx)...)
		w.adv.mu.Lock()
		w.adv.attacks = append(w.adv.attacks, a)
		w.adv.mu.Unlock()
		return nil
	}
	return undo, a.desc, between(rng, time.Second, 2*time.Second), nil
}

// forgedKey and forgedHolder are the lease that a forged AppendEntries
// carries.
const (
	forgedKey    = "adversary/forged"
	forgedHolder = "mallory"
)

// sendForgedAppend sends the forged AppendEntries to f and says whether it
// reached f's Raft port and what it achieved there.
func (w *world) sendForgedAppend(ctx context.Context, f *proc) (reached bool, achieved []string) {
	st, err := w.status(ctx, f)
	if err != nil {
		return false, nil // f is down: the attack did not happen
	}
	var cfg *tls.Config
	if !w.sec.plain {
		worker := client.TLSConfig{CAFile: w.sec.caFile, CertFile: w.sec.certFile, KeyFile: w.sec.keyFile}
		if cfg, err = worker.Build(); err != nil {
			return false, []string{"harness: " + err.Error()}
		}
		cfg.InsecureSkipVerify = true // the adversary takes whoever answers
	}
	var dialed atomic.Bool
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		c, err := w.net.DialFrom(ctx, advNode, "tcp", addr)
		if err == nil {
			dialed.Store(true)
		}
		return c, err
	}
	stream := &dialStream{ctx: ctx, dial: dial, tls: cfg, done: make(chan struct{})}
	trans := raft.NewNetworkTransport(stream, 1, 3*time.Second, io.Discard)
	defer trans.Close()
	term := st.Term + 1000
	self := fmt.Sprintf("%s:%d", w.net.Addr(advNode), portRaft)
	next := st.LastLogIndex + 1
	req := &raft.AppendEntriesRequest{
		RPCHeader:         raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte(advNode), Addr: []byte(self)},
		Term:              term,
		PrevLogEntry:      st.LastLogIndex,
		PrevLogTerm:       st.Term,
		LeaderCommitIndex: next,
		Entries: []*raft.Log{{Index: next, Term: term, Type: raft.LogCommand,
			Data: fsm.Encode(fsm.Acquire{Key: forgedKey, Holder: forgedHolder, TTL: time.Hour})}},
	}
	var resp raft.AppendEntriesResponse
	to := raft.ServerAddress(fmt.Sprintf("%s:%d", w.net.Addr(f.name), portRaft))
	err = trans.AppendEntries(raft.ServerID(f.name), to, req, &resp)
	if err != nil {
		return dialed.Load(), nil // refused (the handshake, with TLS)
	}
	if resp.Term >= term || resp.Success {
		achieved = append(achieved, fmt.Sprintf("%s answered a forged AppendEntries in term %d (success %v, its term now %d)", f.name, term, resp.Success, resp.Term))
	}
	return true, achieved
}

// forgedLeases reports every server that shows the forged lease.
func (w *world) forgedLeases(ctx context.Context) []string {
	var out []string
	for _, s := range w.servers {
		var l client.LeaseInfo
		code, _ := w.call(ctx, http.MethodGet, w.url(s, "/v1/leases/"+forgedKey+"?stale=true"), nil, &l)
		if code == http.StatusOK && l.Holder == forgedHolder {
			out = append(out, fmt.Sprintf("%s shows %s held by %s (token %d): a forged entry was applied", s.name, forgedKey, forgedHolder, l.Token))
		}
	}
	return out
}

// oldRestore: an operator's restore of an old backup, in the order of the
// finding it guards against. The nemesis acquires restoreKey as alice and
// saves a backup; alice releases, bob acquires (a larger token) and
// releases; the workloads go on for the hold. Then the nemesis reads
// every key's token, restores the backup and reads them again. A key's
// token may never go backwards (docs/guarantees.md): alice's lease of the
// backup, whose key has since been granted to bob, comes back free with
// bob's token, and no other key's token falls either. Met when the
// restore succeeded.
//
// A restore is a deliberate step back in time, so runs that use it check
// what survives one: tokens, fencing and mutual exclusion (a lease held
// when the restore runs stays with its holder), not linearizability or
// the durability of what came after the backup.
func oldRestore(ctx context.Context, w *world, rng *rand.Rand) (func() error, string, time.Duration, error) {
	api, err := w.apiClient(w.sec.token)
	if err != nil {
		return nil, "", 0, err
	}
	a := attack{nemesis: "old-restore"}
	none := func() error { return nil }
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	// Each step may fail under an earlier fault (no leader yet): then
	// this fault is a no-op, which resAdversaryMet reports.
	alice, _, err := api.Leases().Acquire(cctx, restoreKey, client.AcquireRequest{Holder: "alice", TTL: 20 * time.Second})
	if err != nil {
		return none, fmt.Sprintf("acquire as alice failed: %v", err), time.Second, nil
	}
	backup, _, err := api.Operator().SaveSnapshot(cctx)
	if err != nil {
		return none, fmt.Sprintf("backup failed: %v", err), time.Second, nil
	}
	if _, err := api.Leases().Release(cctx, restoreKey, "alice", alice.Token); err != nil {
		return none, fmt.Sprintf("release as alice failed: %v", err), time.Second, nil
	}
	bob, _, err := api.Leases().Acquire(cctx, restoreKey, client.AcquireRequest{Holder: "bob", TTL: 20 * time.Second})
	if err != nil {
		return none, fmt.Sprintf("acquire as bob failed: %v", err), time.Second, nil
	}
	if _, err := api.Leases().Release(cctx, restoreKey, "bob", bob.Token); err != nil {
		return none, fmt.Sprintf("release as bob failed: %v", err), time.Second, nil
	}
	hold := between(rng, 3*time.Second, 6*time.Second)
	a.desc = fmt.Sprintf("backup while alice held %s (token %d); bob took it (token %d) and let it go; restore %v later", restoreKey, alice.Token, bob.Token, hold.Round(time.Second))
	undo := func() error {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		before, err := w.keyTokens(cctx, api)
		if err != nil {
			a.desc += fmt.Sprintf("; tokens not read before: %v", err)
		} else if _, _, err := api.Operator().RestoreSnapshot(cctx, backup, 0); err != nil {
			a.desc += fmt.Sprintf("; restore failed: %v", err)
		} else {
			a.met = true
			after, err := w.keyTokens(cctx, api)
			if err != nil {
				return fmt.Errorf("old-restore: tokens after the restore: %w", err)
			}
			for k, t := range before {
				if after[k] < t {
					a.achieved = append(a.achieved, fmt.Sprintf("%s's token went back from %d to %d", k, t, after[k]))
				}
			}
		}
		w.adv.mu.Lock()
		w.adv.attacks = append(w.adv.attacks, a)
		w.adv.mu.Unlock()
		return nil
	}
	return undo, a.desc, hold, nil
}

// restoreKey is the key of the old-restore nemesis.
const restoreKey = "adversary/rk"

// keyTokens reads every key's token (held or free: a free key keeps its
// last one) with a linearizable list, retried until ctx ends.
func (w *world) keyTokens(ctx context.Context, api *client.Client) (map[string]uint64, error) {
	for {
		leases, _, err := api.Leases().List(ctx, nil, nil)
		if err == nil {
			out := make(map[string]uint64, len(leases))
			for _, l := range leases {
				out[l.Key] = l.Token
			}
			return out, nil
		}
		if !sleep(ctx, 200*time.Millisecond) {
			return nil, err
		}
	}
}
