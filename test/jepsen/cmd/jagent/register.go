package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/test/jepsen/history"

	"github.com/tenure-io/tenure/client"
)

const (
	// maxOpPause is the longest random pause between two operations of a
	// register process.
	maxOpPause = 50 * time.Millisecond
	// releaseBudget bounds the releases a stopping agent makes of the
	// leases it holds.
	releaseBudget = time.Second
)

// opWeights is the mix of operations of the register: acquire, renew,
// release, read. A renew or release drawn for a key the process never got
// a token of is drawn again.
var opWeights = []struct {
	f string
	w int
}{{fAcquire, 3}, {fRenew, 2}, {fRelease, 2}, {fRead, 3}}

// regConfig is the configuration of the register workload.
type regConfig struct {
	servers []string
	keys    []string
	ttl     time.Duration
	timeout time.Duration
	// token is the ACL token the requests carry (TENURE_HTTP_TOKEN).
	token string
}

// runRegister is `jagent register`: the lease-register workload of the
// linearizability check.
func runRegister(ctx context.Context, args []string, stderr io.Writer) int {
	var (
		cf    commonFlags
		cfg   regConfig
		keys  string
		procs int
	)
	fs := newFlagSet("register", "-servers URLS -history FILE -name NAME [-procs N] [-keys K,...] [-ttl D] [-timeout D] [-seed N] [-duration D]", stderr)
	cf.register(fs)
	fs.IntVar(&procs, "procs", 3, "logical processes, each issuing one operation at a time")
	fs.StringVar(&keys, "keys", "k0,k1", "comma-separated lease keys")
	fs.DurationVar(&cfg.ttl, "ttl", 2*time.Second, "TTL of the acquisitions")
	fs.DurationVar(&cfg.timeout, "timeout", time.Second, "time limit of each operation")
	code, ok := parseChecked(fs, args, stderr, &cf, func() error {
		if cf.name == "" {
			return errors.New("-name is required")
		}
		if procs < 1 {
			return fmt.Errorf("-procs must be at least 1, got %d", procs)
		}
		if cfg.keys = splitList(keys); len(cfg.keys) == 0 {
			return errors.New("-keys: at least one key is required")
		}
		if err := positive("ttl", cfg.ttl); err != nil {
			return err
		}
		return positive("timeout", cfg.timeout)
	})
	if !ok {
		return code
	}
	cfg.servers = cf.urls
	log := newLogger(stderr, "jagent.register."+cf.name, cf.logLevel)
	last, err := lastOps(cf.history, cf.name+"-")
	if err != nil {
		log.Error("cannot start", "error", err)
		return exitError
	}
	rec, err := openRecorder(cf.history, log)
	if err != nil {
		log.Error("cannot start", "error", err)
		return exitError
	}
	ctx, cancel := cf.runContext(ctx)
	defer cancel()
	log.Info("starting", "procs", procs, "keys", cfg.keys, "ttl", cfg.ttl, "timeout", cfg.timeout, "seed", cf.seed, "servers", cfg.servers)

	// TLS and the ACL token come from the environment, as for the Go
	// client (TENURE_CACERT, TENURE_CLIENT_CERT, TENURE_CLIENT_KEY,
	// TENURE_HTTP_TOKEN).
	env := client.DefaultConfig()
	cfg.token = env.Token
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = procs
	if t.TLSClientConfig, err = env.TLS.Build(); err != nil {
		log.Error("cannot start", "error", err)
		return exitError
	}
	hc := &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var wg sync.WaitGroup
	for i := range procs {
		proc := cf.name + "-" + strconv.Itoa(i)
		p := &regProc{
			cfg: &cfg, proc: proc, http: hc, rec: rec, log: log.With("proc", proc),
			rng: newRand(cf.seed, uint64(i)), op: last[proc],
			tokens: make(map[string]uint64), holds: make(map[string]bool),
		}
		wg.Go(func() { p.run(ctx) })
	}
	wg.Wait()
	t.CloseIdleConnections()
	return stopHolder(log, rec)
}

// regProc is one logical process of the register: it issues one
// operation at a time, as holder proc.
type regProc struct {
	cfg  *regConfig
	proc string
	http *http.Client
	rec  *recorder
	log  hclog.Logger
	rng  *rand.Rand
	op   int64 // the last Op used

	tokens map[string]uint64 // the token of this process's last granted acquire, per key
	holds  map[string]bool   // keys it may hold as far as its answers say
}

// run issues operations until ctx ends; the operation in flight then
// finishes (within -timeout), and the leases the process may hold are
// released, each release an operation of the history, within a second.
func (p *regProc) run(ctx context.Context) {
	for ctx.Err() == nil {
		p.do(context.Background(), p.next(), p.cfg.timeout)
		sleepCtx(ctx, between(p.rng, 0, maxOpPause))
	}
	var held []string
	for key, h := range p.holds {
		if h {
			held = append(held, key)
		}
	}
	slices.Sort(held)
	end := time.Now().Add(releaseBudget)
	for _, key := range held {
		left := time.Until(end)
		if left <= 0 {
			break
		}
		p.do(context.Background(), regOp{f: fRelease, key: key, holder: p.proc, token: p.tokens[key]}, min(left, p.cfg.timeout))
	}
}

// next draws the next operation.
func (p *regProc) next() regOp {
	total := 0
	for _, w := range opWeights {
		total += w.w
	}
	for {
		key := p.cfg.keys[p.rng.IntN(len(p.cfg.keys))]
		n := p.rng.IntN(total)
		f := opWeights[len(opWeights)-1].f
		for _, w := range opWeights {
			if n < w.w {
				f = w.f
				break
			}
			n -= w.w
		}
		op := regOp{f: f, key: key, holder: p.proc, token: p.tokens[key], ttl: int64(p.cfg.ttl)}
		if (f == fRenew || f == fRelease) && op.token == 0 {
			continue // never got a token of this key: draw again
		}
		return op
	}
}

// do sends op to a random server with the time limit timeout, and records
// its invoke and completion. An operation whose invoke cannot be recorded
// is not sent.
func (p *regProc) do(parent context.Context, op regOp, timeout time.Duration) {
	server := p.cfg.servers[p.rng.IntN(len(p.cfg.servers))]
	ctx, cancel := context.WithTimeout(parent, timeout)
	defer cancel()
	req, err := op.request(ctx, server)
	if err == nil && p.cfg.token != "" {
		req.Header.Set(client.HeaderToken, p.cfg.token)
	}
	if err != nil {
		p.log.Error("operation not sent", "f", op.f, "key", op.key, "error", err)
		return
	}
	p.op++
	inv := op.invoke()
	inv.Proc, inv.Op = p.proc, p.op
	inv.T = history.Now()
	if err := p.rec.Write(inv); err != nil {
		return
	}
	done := p.send(req, op.f)
	done.Proc, done.Op, done.F, done.Key = p.proc, p.op, op.f, op.key
	_ = p.rec.Write(done) // a failure is logged by the recorder
	p.learn(op, done)
	p.log.Debug("operation", "op", p.op, "f", op.f, "key", op.key, "server", server, "kind", done.Kind, "token", done.Token, "err", done.Err)
}

// send makes the request and classifies what came back; the completion's
// T is read right after the answer (or the error) arrived.
func (p *regProc) send(req *http.Request, f string) history.Event {
	resp, err := p.http.Do(req)
	if err != nil {
		t := history.Now()
		done := classifyErr(err)
		done.T = t
		return done
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	resp.Body.Close()
	t := history.Now()
	var done history.Event
	if err != nil {
		done = classifyErr(err)
	} else {
		done = classify(f, resp.StatusCode, body)
	}
	done.T = t
	return done
}

// learn updates what the process knows of its leases from a completion.
func (p *regProc) learn(op regOp, done history.Event) {
	switch {
	case op.f == fAcquire && done.Kind == history.OK:
		p.tokens[op.key], p.holds[op.key] = done.Token, true
	case op.f == fRenew && done.Kind == history.OK:
		p.holds[op.key] = true
	case op.f == fAcquire && done.Kind == history.Fail && done.Err == "held":
		p.holds[op.key] = false
	case op.f == fRenew && done.Kind == history.Fail && done.Err == "lease_lost":
		p.holds[op.key] = false
	case op.f == fRelease && done.Kind == history.OK:
		p.holds[op.key] = false
	case op.f == fRead && done.Kind == history.OK && (done.State != "held" || done.Holder != p.proc):
		p.holds[op.key] = false
	}
}
