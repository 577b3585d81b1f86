package main

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenure-io/tenure/client"
)

// The operations of a bench run, in report order.
const (
	opAcquire = iota
	opRenew
	opRead
	opRelease
	numOps
)

var opNames = [numOps]string{"acquire", "renew", "read", "release"}

// benchConfig is a parsed bench command line.
type benchConfig struct {
	cluster  clusterFlags
	clients  int
	duration time.Duration
	requests int64
	op       string
	mix      string
	weights  [numOps]int
	ttl      time.Duration
	keys     int
	stale    bool
	retryMax int
}

func (e *env) bench(ctx context.Context, args []string) int {
	var bc benchConfig
	fs := e.newFlagSet("bench", "bench [-clients N] [-duration D | -requests N] [-op acquire|renew|read|release|mix] [flags]")
	bc.cluster.register(fs)
	fs.IntVar(&bc.clients, "clients", 16, "concurrent clients, each with its own holder and keys")
	fs.DurationVar(&bc.duration, "duration", 10*time.Second, "how long to run (ignored with -requests unless set)")
	fs.Int64Var(&bc.requests, "requests", 0, "stop after this many operations in all")
	fs.StringVar(&bc.op, "op", "mix", "operation: acquire, renew, read, release or mix")
	fs.StringVar(&bc.mix, "mix", "acquire=1,renew=4,release=1,read=4", "weights of the operations for -op mix")
	fs.DurationVar(&bc.ttl, "ttl", 10*time.Second, "TTL of the leases")
	fs.IntVar(&bc.keys, "keys", 4, "keys per client")
	fs.BoolVar(&bc.stale, "stale", false, "reads may be served by any server from its local state")
	fs.IntVar(&bc.retryMax, "retry-max", 0, "retries of retryable failures, as a real client would (0: every failure counts)")
	if _, code, ok := e.parse(fs, args, 0, 0); !ok {
		return code
	}
	if bc.requests > 0 && !given(fs, "duration") {
		bc.duration = 0
	}
	if err := bc.validate(); err != nil {
		return e.usageError(fs, err.Error())
	}
	r, err := newBenchRun(&bc)
	if err != nil {
		return e.fail(err)
	}
	if !bc.cluster.json {
		fmt.Fprintf(e.stdout, "bench run %s: %d clients, %d keys each, op %s\n", r.id, bc.clients, bc.keys, bc.op)
	}
	rep := r.run(ctx, e)
	if code := e.show(bc.cluster.json, rep, nil, func() { rep.print(e) }); code != exitOK {
		return code
	}
	if rep.total == 0 && rep.failed > 0 {
		return e.fail(errors.New("no operation succeeded"))
	}
	return exitOK
}

func (bc *benchConfig) validate() error {
	switch {
	case bc.clients < 1:
		return fmt.Errorf("-clients must be at least 1, got %d", bc.clients)
	case bc.keys < 1:
		return fmt.Errorf("-keys must be at least 1, got %d", bc.keys)
	case bc.requests < 0:
		return fmt.Errorf("-requests must not be negative, got %d", bc.requests)
	case bc.requests == 0 && bc.duration <= 0:
		return errors.New("-duration must be positive when -requests is not set")
	case bc.ttl <= 0:
		return fmt.Errorf("-ttl must be positive, got %v", bc.ttl)
	case bc.retryMax < 0:
		return fmt.Errorf("-retry-max must not be negative, got %d", bc.retryMax)
	}
	if bc.op == "mix" {
		w, err := parseMix(bc.mix)
		if err != nil {
			return fmt.Errorf("-mix: %w", err)
		}
		bc.weights = w
		return nil
	}
	if i := slices.Index(opNames[:], bc.op); i >= 0 {
		bc.weights[i] = 1
		return nil
	}
	return fmt.Errorf("-op must be acquire, renew, read, release or mix, got %q", bc.op)
}

// parseMix parses "acquire=1,renew=4,release=1,read=4". Operations not
// named get weight 0.
func parseMix(s string) ([numOps]int, error) {
	var w [numOps]int
	sum := 0
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		if !ok {
			return w, fmt.Errorf("want op=weight, got %q", part)
		}
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 {
			return w, fmt.Errorf("weight of %s must be a non-negative integer, got %q", name, val)
		}
		i := slices.Index(opNames[:], name)
		if i < 0 {
			return w, fmt.Errorf("unknown operation %q", name)
		}
		w[i] = n
		sum += n
	}
	if sum == 0 {
		return w, errors.New("all weights are zero")
	}
	return w, nil
}

// benchRun is one run of the bench command.
type benchRun struct {
	cfg     *benchConfig
	id      string
	clients []*benchClient
	stats   [numOps]opStats
	done    atomic.Uint64 // operations finished, successful or not
	tickets atomic.Int64  // operations started, for -requests
	// warmUpErrors counts failed acquisitions of the warm-up.
	warmUpErrors atomic.Uint64
}

func newBenchRun(cfg *benchConfig) (*benchRun, error) {
	var b [4]byte
	_, _ = crand.Read(b[:])
	r := &benchRun{cfg: cfg, id: hex.EncodeToString(b[:])}
	for i := 0; i < cfg.clients; i++ {
		ccfg := cfg.cluster.config()
		ccfg.RetryMax = cfg.retryMax
		ccfg.DisableStream = false // the Go client's default, as an application has it
		c, err := client.New(ccfg)
		if err != nil {
			return nil, err
		}
		bc := &benchClient{
			run: r, c: c, holder: fmt.Sprintf("bench-%s-%d", r.id, i),
			keys: make([]string, cfg.keys), tokens: make([]uint64, cfg.keys),
			rng: rand.New(rand.NewPCG(uint64(i), rand.Uint64())),
		}
		for n := range bc.keys {
			bc.keys[n] = fmt.Sprintf("bench/%s/%d/%d", r.id, i, n)
		}
		r.clients = append(r.clients, bc)
	}
	return r, nil
}

// run warms up, measures until the duration ends, the requests are spent
// or ctx is cancelled, releases what the clients hold, and reports.
func (r *benchRun) run(ctx context.Context, e *env) *benchReport {
	if r.cfg.op != "acquire" {
		r.each(func(c *benchClient) { c.warmUp(ctx) })
	}

	measureCtx := ctx
	if r.cfg.duration > 0 {
		var cancel context.CancelFunc
		measureCtx, cancel = context.WithTimeout(ctx, r.cfg.duration)
		defer cancel()
	}
	start := time.Now()
	stopProgress := r.progress(e, start)
	r.each(func(c *benchClient) {
		for measureCtx.Err() == nil && r.take() {
			// Requests use ctx, not measureCtx: the end of the duration
			// stops new operations but lets those in flight finish.
			c.step(ctx)
		}
	})
	elapsed := time.Since(start)
	stopProgress()

	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	r.each(func(c *benchClient) { c.releaseAll(cleanup) })
	return r.report(elapsed)
}

// take reserves one operation under -requests.
func (r *benchRun) take() bool {
	return r.cfg.requests <= 0 || r.tickets.Add(1) <= r.cfg.requests
}

// each runs f for every client concurrently and waits.
func (r *benchRun) each(f func(c *benchClient)) {
	var wg sync.WaitGroup
	for _, c := range r.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(c)
		}()
	}
	wg.Wait()
}

// progress prints the operations so far once a second on stderr until the
// returned function is called.
func (r *benchRun) progress(e *env, start time.Time) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		var last uint64
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				n := r.done.Load()
				fmt.Fprintf(e.stderr, "%6.0fs  %10d ops  %10d ops/s\n", now.Sub(start).Seconds(), n, n-last)
				last = n
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}
