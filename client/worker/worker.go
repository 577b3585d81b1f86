package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/internal/wait"
	"github.com/tenure-io/tenure/client/wire"
)

// Handler does the work of one key. The worker calls it, in a goroutine of
// its own, when it has acquired the key, with the lease's fencing token and
// a context that ends when the key moves to another worker, when the lease
// is lost, or when the worker stops. The handler should return promptly
// once ctx is done: the worker hands the key back (releases the lease) only
// after the handler returned, so the next owner never overlaps it. A handler
// that returns early keeps the key held, without work, until it moves.
// ctx.Err() checks the lease's local deadline when it is called, like
// Lease.Context: check it right before an action that must not happen
// without the key (and fence the action with the token anyway).
type Handler func(ctx context.Context, key string, token uint64)

// WorkerOption configures a Worker.
type WorkerOption func(*workerConfig)

type workerConfig struct {
	id       string
	holder   string
	capacity int
	// loadCapacity is the load the worker can carry (WithLoadCapacity).
	loadCapacity float64
	// prepare and prepareTime are WithPrepare's.
	prepare     func(ctx context.Context, key string) error
	prepareTime time.Duration
	ttl         time.Duration
	gossipAddr  string
	// gossipAddrSet: WithGossipAddr was given (the default may move off
	// loopback when the servers are not on it).
	gossipAddrSet bool
	advertise     string
	join          []string
	logger        hclog.Logger
	retry         time.Duration
	// gossipKeys encrypt the worker's gossip (WithGossipKeys).
	gossipKeys    [][]byte
	gossipKeysSet bool
}

// WithWorkerID sets the worker's id, which is also the holder of its
// leases. The default is the client's holder id (hostname-pid-random).
func WithWorkerID(id string) WorkerOption { return func(c *workerConfig) { c.id = id } }

// WithCapacity bounds the keys the balancer gives this worker (0: no bound).
func WithCapacity(n int) WorkerOption { return func(c *workerConfig) { c.capacity = n } }

// WithLoadCapacity announces the load the worker can carry, in the unit
// of the loads it reports (ReportLoad): a group that balances by load gives
// each worker a share of the group's load in proportion to it. Workers that
// announce none count as the mean of those that do (all equal when none
// does). Run fails with ErrInvalid for a capacity outside [0,
// wire.MaxLoad].
func WithLoadCapacity(load float64) WorkerOption {
	return func(c *workerConfig) { c.loadCapacity = load }
}

// WithPrepare makes the worker prepare each key that moves to it from
// another worker, before it owns it (a warm hand-off): the balancer names
// this worker to prepare the key while the old owner keeps it; the worker
// runs prepare(ctx, key) — reads, cache warming, replaying a log: no
// writes, since it holds no lease and no token yet — and, when prepare
// returns nil, tells the cluster (GroupsAPI.Prepared), which makes the key
// its target; the old owner's handler is then cancelled, it hands the key
// back, and this worker acquires it with a new token, as in every move.
// The key is without a running handler for one commit plus the old
// handler's finish time instead of that plus a cold start.
//
// maxTime is the longest a prepare may take (at most wire.MaxPrepare): the
// balancer moves the key anyway once it has passed, prepared or not. ctx
// ends when the key is no longer to be prepared here (the plan changed,
// or maxTime passed) or the worker stops; the key's handler starts only
// once prepare has returned. When prepare returns an error, the worker
// logs it (key_prepare_failed) and says so all the same: the key moves
// here at once, unprepared. Run waits for every prepare to return before
// it returns. Keys with no live
// owner to wait for (new keys, a dead or stopping worker's) move at once,
// unprepared. Run fails with ErrInvalid for a nil prepare or a maxTime
// outside (0, wire.MaxPrepare].
func WithPrepare(maxTime time.Duration, prepare func(ctx context.Context, key string) error) WorkerOption {
	return func(c *workerConfig) { c.prepare, c.prepareTime = prepare, maxTime }
}

// WithWorkerTTL sets the TTL of the worker's leases (default 10s): how long
// its keys stay unowned after it dies.
func WithWorkerTTL(d time.Duration) WorkerOption { return func(c *workerConfig) { c.ttl = d } }

// WithGossipAddr sets the address the worker's gossip binds, "host:port"
// (port 0: a free one). Servers must reach it. A specific host is also the
// address the worker announces; with an unspecified host ("0.0.0.0:7946")
// the worker announces its local address that routes to the first server
// (WithJoin's, else the client's Config.Addresses). The default,
// "127.0.0.1:0", stays on loopback only while the servers are on loopback:
// otherwise the worker binds and announces its local address that routes
// to the first server.
func WithGossipAddr(addr string) WorkerOption {
	return func(c *workerConfig) { c.gossipAddr, c.gossipAddrSet = addr, true }
}

// WithGossipAdvertise sets the address the worker announces to the
// servers, "host" or "host:port" (the port defaults to the bound one),
// when the one it would choose is wrong (behind NAT, in a container).
// It wins over every choice WithGossipAddr describes.
func WithGossipAdvertise(addr string) WorkerOption {
	return func(c *workerConfig) { c.advertise = addr }
}

// WithJoin sets the gossip addresses to join. The default asks the cluster
// (GET /v1/members) for its servers' gossip addresses.
func WithJoin(addrs ...string) WorkerOption { return func(c *workerConfig) { c.join = addrs } }

// WithWorkerLogger sets the worker's logger. The worker logs at Info each
// key it acquires (key_acquired), hands back (key_released) and loses
// (key_lost: its lease ended while the key was still its target), with
// the key, group and token; at Warn a hand-back the cluster refused
// (key_release_failed, with the error: the key stays held until its lease
// expires); and at Error, within seconds, why its gossip cannot join the
// servers when a gossip key explains it (none, or not the servers'), at
// Warn when no server answers, again every 30s while that lasts. Without
// this option the worker logs through the client's Config.Logger, or,
// when that is nil too, to stderr at Info.
func WithWorkerLogger(l hclog.Logger) WorkerOption { return func(c *workerConfig) { c.logger = l } }

// Worker owns the keys of one group that the cluster's balancer assigns to
// it: it announces itself over gossip (id, group, capacity, draining),
// watches its target keys with a blocking query, acquires each target with
// a blocking acquire (so it gets the key the moment the previous owner
// hands it back), runs the handler while it holds the key, and hands a key
// back once its handler returned after the key moved away.
//
// Exclusivity comes from the leases alone: the assignment is intent.
type Worker struct {
	c       *client.Client
	group   string
	handler Handler
	cfg     workerConfig
	log     hclog.Logger

	mu   sync.Mutex
	keys map[string]*ownedKey
	// preparing are the prepares of keys being prepared here
	// (WithPrepare); prepares are the goroutines that run them.
	preparing map[string]*preparation
	prepares  sync.WaitGroup
	total     *float64 // ReportTotalLoad
	members   *workerGossip
	changed   chan struct{} // closed and replaced when keys change
}

// preparation is the prepare of one key: end cancels it, done is closed
// when its goroutine has ended (the application's prepare returned).
type preparation struct {
	end  context.CancelFunc
	done chan struct{}
}

// ownedKey is a key the worker is trying to own or owns.
type ownedKey struct {
	moved context.CancelFunc // the key is no longer a target
	gone  bool               // moved was called: the goroutine is ending
	held  bool               // the handler runs (or ran) under a lease
	done  chan struct{}      // closed when the key goroutine ends
	// prev is the goroutine of the key that was still ending when the key
	// came back; this one starts once prev.done is closed.
	prev *ownedKey
	// lease is the key's lease while the handler runs; load the key's
	// load (ReportLoad), reported with each lease of this goroutine.
	lease *client.Lease
	load  *float64
}

// holds reports whether a handler of the key runs under a lease: this
// goroutine's, or that of one still ending before it. w.mu held.
func (k *ownedKey) holds() bool {
	for ; k != nil; k = k.prev {
		if k.held {
			return true
		}
	}
	return false
}

// New returns a worker of group that runs handler for each key it owns,
// through c. Start it with Run.
func New(c *client.Client, group string, handler Handler, opts ...WorkerOption) *Worker {
	cfg := workerConfig{id: c.Holder(), ttl: 10 * time.Second, gossipAddr: defaultGossipAddr, retry: time.Second}
	for _, o := range opts {
		o(&cfg)
	}
	// The holder is unique to this Worker, even when two processes are
	// (wrongly) given one id: events, lists and the balancer tell the two
	// apart by it. (Their lease secrets differ too, so neither could take
	// the other's lease.)
	cfg.holder = cfg.id + "#" + wire.NewLeaseSecret()[:8] // 8 random hex digits
	log := cmp.Or(cfg.logger, c.Config().Logger)
	if log == nil {
		log = hclog.New(&hclog.LoggerOptions{Name: "tenure", Level: hclog.Info, Output: os.Stderr})
	}
	return &Worker{c: c, group: group, handler: handler, cfg: cfg, log: log.Named("worker").With("group", group, "worker", cfg.id),
		keys: make(map[string]*ownedKey), preparing: make(map[string]*preparation), changed: make(chan struct{})}
}

// ID is the worker's id: its name in the group's plan.
func (w *Worker) ID() string { return w.cfg.id }

// Holder is the holder of the worker's leases: its id and a random suffix
// unique to this Worker. Each lease also names the id in its metadata
// ("worker"), so the group view shows which worker holds a key.
func (w *Worker) Holder() string { return w.cfg.holder }

// Run joins the group and owns keys until ctx ends. When the client has an
// ACL token (Config.Token), it first registers the worker for the group
// with it (GroupsAPI.RegisterWorker) and fails if the cluster refuses. Then it stops every
// handler and prepare (WithPrepare), waits for them, releases its leases and leaves gossip, so the
// balancer moves its keys at once; it returns ctx's error. It returns
// earlier with an error if it cannot start gossip (bind its address);
// while no server admits its gossip join it keeps trying, and logs why
// (WithWorkerLogger).
func (w *Worker) Run(ctx context.Context) error {
	if w.group == "" || w.handler == nil {
		return fmt.Errorf("%w: a worker needs a group and a handler", client.ErrInvalid)
	}
	if err := checkName("group", w.group); err != nil {
		return err
	}
	if err := checkName("worker id", w.cfg.id); err != nil {
		return fmt.Errorf("%w (the id is the client's holder unless WithWorkerID sets one)", err)
	}
	if p := wire.LoadProblem(w.cfg.loadCapacity); p != "" {
		return fmt.Errorf("%w: load capacity %s", client.ErrInvalid, p)
	}
	if (w.cfg.prepare != nil || w.cfg.prepareTime != 0) && (w.cfg.prepare == nil || w.cfg.prepareTime <= 0 || w.cfg.prepareTime > wire.MaxPrepare) {
		return fmt.Errorf("%w: WithPrepare needs a prepare function and a time in (0, %s], got %s", client.ErrInvalid, wire.MaxPrepare, w.cfg.prepareTime)
	}
	if w.c.Config().Token != "" {
		// With ACLs on, the balancer plans keys only to workers that a
		// token registered.
		err := w.c.Groups().RegisterWorker(ctx, w.cfg.id, []string{w.group})
		if err != nil && !errors.Is(err, client.ErrACLDisabled) {
			return fmt.Errorf("register worker %s: %w", w.cfg.id, err)
		}
	}
	g, err := startWorkerGossip(ctx, w)
	if err != nil {
		return err
	}
	w.mu.Lock()
	w.members = g
	w.mu.Unlock()
	defer g.leave()
	var rejoin sync.WaitGroup
	rejoin.Go(func() { g.keepJoined(ctx, w) })
	defer rejoin.Wait()

	var index uint64
	for ctx.Err() == nil {
		plan, meta, err := w.c.Groups().Plan(ctx, w.group, w.cfg.id, &client.QueryOptions{Stale: true, WaitIndex: index, WaitTime: time.Minute})
		var ae *client.APIError
		switch {
		case err == nil && meta.Index < index:
			continue // a server behind the one that answered before: ignore
		case err == nil:
			index = meta.Index
		case errors.As(err, &ae) && errors.Is(err, client.ErrNotFound):
			plan, index = &client.Assignment{}, ae.Index // no such group (yet): own nothing
		default:
			if ctx.Err() == nil {
				w.log.Debug("watching targets failed", "error", err)
				wait.Sleep(ctx, w.cfg.retry)
			}
			continue
		}
		w.reconcile(ctx, plan)
	}
	// Announce the drain first, so the balancer moves the keys to workers
	// that queue for them while this one hands them back.
	if err := g.setDraining(true, time.Second); err != nil {
		w.log.Debug("announcing the drain failed", "error", err)
	}
	w.reconcile(ctx, &client.Assignment{})
	w.waitKeys(context.Background(), 0)
	w.prepares.Wait()
	return ctx.Err()
}

// reconcile starts owning new targets and lets go of keys that moved, and
// starts and ends the prepares of keys (WithPrepare).
func (w *Worker) reconcile(ctx context.Context, a *client.Assignment) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ended := w.reconcilePrepares(ctx, a.Prepare)
	plan := a.Assignment
	for key, k := range w.keys {
		if _, ok := plan[key]; !ok || ctx.Err() != nil {
			k.moved()
			k.gone = true
		}
	}
	if ctx.Err() != nil {
		return
	}
	for key := range plan {
		prev := w.keys[key]
		if prev != nil && !prev.gone {
			continue
		}
		kctx, moved := context.WithCancel(ctx)
		k := &ownedKey{moved: moved, done: make(chan struct{}), prev: prev}
		w.keys[key] = k
		go func() {
			// A key that comes back while its previous goroutine still
			// hands it back (its handler has not returned yet) is owned
			// again once that goroutine ended: one goroutine per key at a
			// time, and no target left without an owner.
			if prev != nil {
				<-prev.done
				w.mu.Lock()
				k.prev = nil
				w.mu.Unlock()
			}
			if p := ended[key]; p != nil {
				<-p.done // the application's prepare of the key has returned
			}
			w.own(kctx, key, k)
		}()
	}
}

// reconcilePrepares ends the prepares of keys no longer to be prepared
// here, and returns them, and starts those of new ones. w.mu held.
func (w *Worker) reconcilePrepares(ctx context.Context, prepare map[string]string) map[string]*preparation {
	var ended map[string]*preparation
	for key, p := range w.preparing {
		if _, ok := prepare[key]; !ok || ctx.Err() != nil {
			p.end()
			delete(w.preparing, key)
			if ended == nil {
				ended = make(map[string]*preparation)
			}
			ended[key] = p
		}
	}
	if w.cfg.prepare == nil || ctx.Err() != nil {
		return ended
	}
	for key := range prepare {
		if w.preparing[key] != nil {
			continue
		}
		pctx, end := context.WithCancel(ctx)
		p := &preparation{end: end, done: make(chan struct{})}
		w.preparing[key] = p
		w.prepares.Go(func() {
			defer func() {
				end()
				w.mu.Lock()
				if w.preparing[key] == p {
					// Done: a plan still naming the key (a stale read)
					// starts another prepare, whose report is ignored.
					delete(w.preparing, key)
				}
				w.mu.Unlock()
				close(p.done)
			}()
			w.prepareKey(pctx, key)
		})
	}
	return ended
}

// prepareKey runs the application's prepare of key and tells the cluster
// the key may move here, until ctx ends: after a failed prepare too (the
// key then moves here unprepared at once, rather than after the prepare
// time).
func (w *Worker) prepareKey(ctx context.Context, key string) {
	start := time.Now()
	if err := w.cfg.prepare(ctx, key); err != nil {
		if ctx.Err() != nil {
			return
		}
		w.log.Warn("key_prepare_failed", "key", key, "error", err, "note", "the key moves here unprepared")
	}
	for ctx.Err() == nil {
		keys, err := w.c.Groups().Prepared(ctx, w.group, w.cfg.id, []string{key})
		switch {
		case err == nil:
			w.log.Info("key_prepared", "key", key, "took", time.Since(start), "moving", len(keys) == 1)
			return
		case ctx.Err() != nil:
		case errors.Is(err, client.ErrInvalid) || errors.Is(err, client.ErrNotFound) || errors.Is(err, client.ErrPermissionDenied) ||
			errors.Is(err, client.ErrACLNotFound):
			w.log.Warn("key_prepared_refused", "key", key, "error", err,
				"note", "the key moves here once the prepare time has passed")
			return
		default:
			w.log.Debug("reporting a prepared key failed", "key", key, "error", err)
			wait.Sleep(ctx, w.cfg.retry)
		}
	}
}

// own acquires key (waiting for its previous owner to hand it back), runs
// the handler while the lease lasts, and releases it once the key moved.
// If the lease is lost while the key is still a target, it acquires again.
func (w *Worker) own(ctx context.Context, key string, k *ownedKey) {
	defer func() {
		w.mu.Lock()
		if w.keys[key] == k {
			delete(w.keys, key)
		}
		w.notifyLocked()
		w.mu.Unlock()
		close(k.done)
	}()
	for ctx.Err() == nil {
		lease, err := w.c.AcquireNew(ctx, key, client.WithTTL(w.cfg.ttl), client.WithWait(time.Minute), client.WithHolder(w.cfg.holder),
			client.WithMetadata(map[string]string{"worker": w.cfg.id}), client.WithLogger(w.log))
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, client.ErrHeld) {
				// Disabled, prohibited or unavailable: the balancer will move
				// the key, or the cluster will come back.
				w.log.Debug("acquire failed", "key", key, "error", err)
				wait.Sleep(ctx, w.cfg.retry)
			}
			continue
		}
		w.setHeld(k, true, lease)
		hctx, stop := context.WithCancel(lease.Context())
		stopOnMove := context.AfterFunc(ctx, stop)
		w.log.Info("key_acquired", "key", key, "token", lease.Token())
		w.handler(handlerContext{hctx, lease}, key, lease.Token())
		<-hctx.Done() // a handler that returned early keeps the key until it moves
		stopOnMove()
		stop()
		if ctx.Err() == nil {
			// Still a target and the worker still runs: the lease ended.
			w.log.Info("key_lost", "key", key, "token", lease.Token(), "error", lease.Err())
		}
		rctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := lease.Release(rctx); err != nil {
			w.log.Warn("key_release_failed", "key", key, "token", lease.Token(), "error", err,
				"note", "the key stays held until its lease expires (its TTL), then moves")
		} else {
			w.log.Info("key_released", "key", key, "token", lease.Token())
		}
		cancel()
		w.setHeld(k, false, nil)
	}
}

// setHeld records whether k's handler runs under lease, and gives a new
// lease the key's load and the worker's total.
func (w *Worker) setHeld(k *ownedKey, held bool, lease *client.Lease) {
	w.mu.Lock()
	defer w.mu.Unlock()
	k.held, k.lease = held, lease
	if lease != nil && k.load != nil {
		lease.ReportLoad(*k.load) // checked by ReportLoad
	}
	if lease != nil && w.total != nil {
		w.c.ReportHolderLoad(w.cfg.holder, *w.total) // the client forgets it when it holds no lease
	}
	w.notifyLocked()
}

// ReportLoad sets the load of key, one of this worker's keys, in a unit
// the application chooses (requests per second, bytes, CPU; the unit of
// WithLoadCapacity): its renewals report it from now on, until the next
// ReportLoad or until the key moves away (Lease.ReportLoad). Report a
// level, not a count. The leader keeps a decayed average of each key's
// reports (it stays with the key when the key moves) and, when the group
// balances by load, places keys by it. Call it from the key's handler.
// It fails with ErrInvalid for a load that is NaN or outside [0,
// wire.MaxLoad], or for a key that is not one of the worker's targets.
func (w *Worker) ReportLoad(key string, load float64) error {
	if p := wire.LoadProblem(load); p != "" {
		return fmt.Errorf("%w: load %s", client.ErrInvalid, p)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	k := w.keys[key]
	if k == nil || k.gone {
		return fmt.Errorf("%w: %q is not one of worker %s's keys", client.ErrInvalid, key, w.cfg.id)
	}
	k.load = &load
	if k.lease != nil {
		return k.lease.ReportLoad(load)
	}
	return nil
}

// ReportTotalLoad sets the worker's total load (in the unit of
// ReportLoad: what its keys cost and whatever else it runs), reported
// with its renewals from now on (from its next key on, while it holds
// none). The group view shows it beside the sum of
// its keys' loads and its WithLoadCapacity. It fails with ErrInvalid for a
// load that is NaN or outside [0, wire.MaxLoad].
func (w *Worker) ReportTotalLoad(load float64) error {
	if p := wire.LoadProblem(load); p != "" {
		return fmt.Errorf("%w: load %s", client.ErrInvalid, p)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.total = &load
	for _, k := range w.keys {
		if k.lease != nil {
			// Under w.mu, so that a lease acquired meanwhile (setHeld)
			// cannot report an older total after this one.
			return w.c.ReportHolderLoad(w.cfg.holder, load)
		}
	}
	return nil // reported with the first key the worker holds (setHeld)
}

func (w *Worker) notifyLocked() {
	close(w.changed)
	w.changed = make(chan struct{})
}

// Keys returns the keys whose handler runs now (the worker holds their
// leases), sorted.
func (w *Worker) Keys() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for key, k := range w.keys {
		if k.holds() {
			out = append(out, key)
		}
	}
	sort.Strings(out)
	return out
}

// Drain announces that this worker is draining, so the balancer moves all
// of its keys to other workers, and returns once it holds none (each key
// was handed back after its handler returned), or when ctx ends. Use it
// before stopping a worker for a rolling upgrade.
func (w *Worker) Drain(ctx context.Context) error {
	w.mu.Lock()
	g := w.members
	w.mu.Unlock()
	if g == nil {
		return fmt.Errorf("%w: the worker is not running", client.ErrInvalid)
	}
	if err := g.setDraining(true, 5*time.Second); err != nil {
		return err
	}
	return w.waitKeys(ctx, 0)
}

// waitKeys waits until the worker has at most n keys (held or being
// acquired).
func (w *Worker) waitKeys(ctx context.Context, n int) error {
	for {
		w.mu.Lock()
		left, changed := len(w.keys), w.changed
		w.mu.Unlock()
		if left <= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// checkName applies the cluster's rule for group names and worker ids
// (wire.NameProblem): a worker checks its own before it starts, so that it
// never announces an id the balancer would ignore.
func checkName(field, name string) error {
	p := wire.NameProblem(name)
	switch {
	case p == "":
		return nil
	case name == "" || len(name) > wire.MaxNameLen:
		return fmt.Errorf("%w: %s: %s", client.ErrInvalid, field, p)
	}
	return fmt.Errorf("%w: %s %q: %s", client.ErrInvalid, field, name, p)
}

// handlerContext is the context of a handler: it ends with the lease or
// when the key moves, and its Err checks the lease's local deadline at the
// call, as Lease.Context does.
type handlerContext struct {
	context.Context
	lease *client.Lease
}

// Err is the context's error, after ending the lease if its deadline has
// passed (which cancels the context before Err reads it).
func (c handlerContext) Err() error {
	c.lease.Err()
	return c.Context.Err()
}
