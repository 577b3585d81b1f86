package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client/wire"
)

const (
	// DefaultLeaseTTL is the TTL of Acquire, AcquireSemaphore and Election
	// when no WithTTL is given.
	DefaultLeaseTTL = 10 * time.Second

	// WaitForever, given to WithWait, makes an acquisition wait until its
	// context ends.
	WaitForever time.Duration = math.MaxInt64

	// maxHolderBytes is the longest holder the API accepts.
	maxHolderBytes = wire.MaxHolderLen

	// waitChunk bounds the wait of one blocking acquire request: a longer
	// wait is made of several requests, so that it never exceeds the
	// server's max-wait (10m by default) and a broken connection costs at
	// most one chunk.
	waitChunk = time.Minute

	// minMargin is the smallest default margin: it covers timer and
	// scheduling latency and the time code needs to see a cancellation.
	minMargin = 100 * time.Millisecond

	// cleanupTimeout bounds the best-effort release of a lease that may
	// have been granted to an acquisition whose caller gave up.
	cleanupTimeout = 3 * time.Second
)

// DefaultMargin is the margin of a lease of the given TTL when no
// WithMargin is given: TTL/10, but at least 100ms, and at most TTL/2.
//
// The margin is how long before the cluster's earliest possible expiry the
// holder stops treating itself as holder. It must cover the difference
// between the rates of this process's clock and the servers' (a rate error
// ρ needs ρ·TTL; real clocks are within 0.1%, so TTL/10 leaves a wide
// berth), the delay of the timer that notices the deadline, and the time
// the application needs to see the cancellation and stop acting.
func DefaultMargin(ttl time.Duration) time.Duration {
	m := max(ttl/10, minMargin)
	return min(m, ttl/2)
}

// LeaseOption configures Acquire, AcquireSemaphore and Election.
type LeaseOption func(*leaseConfig)

type leaseConfig struct {
	ttl      time.Duration
	wait     time.Duration
	metadata map[string]string
	holder   string
	log      hclog.Logger
	margin   time.Duration // 0: DefaultMargin(ttl)
	hooks    Hooks
	interval time.Duration // 0: TTL/3
	strict   bool          // WithLoseOnRenewFailure
	election string        // the election a Campaign acquires for
}

// WithTTL sets the lease's TTL (default DefaultLeaseTTL, 10s). It must lie
// within the servers' -min-ttl and -max-ttl. A holder that dies frees the
// key after at most TTL; a holder that cannot reach the cluster stops
// acting after TTL − margin.
func WithTTL(d time.Duration) LeaseOption { return func(c *leaseConfig) { c.ttl = d } }

// WithWait makes the acquisition wait up to d for the key to be free,
// queued on the server behind the current holder (FIFO per key), so it is
// granted the moment the key frees, in the same log entry as the release.
// WaitForever waits until the context ends. Zero (the default) does not
// wait: a held key is refused with ErrHeld at once. A wait longer than a
// minute is made of several blocking requests (shorter ones when the
// servers' -max-wait is below a minute); transient failures while waiting
// are retried with backoff. Election ignores it: Campaign always waits
// until its context ends.
func WithWait(d time.Duration) LeaseOption { return func(c *leaseConfig) { c.wait = d } }

// WithMetadata stores m with the lease (at most 16 entries; keys up to 64
// bytes, values up to 1024). Readers of the key see it: an elected leader
// publishes its address this way. The map is copied.
func WithMetadata(m map[string]string) LeaseOption {
	m = maps.Clone(m)
	return func(c *leaseConfig) { c.metadata = m }
}

// WithHolder acquires under holder instead of the Client's holder
// (Client.Holder). Holders must be unique per process: the cluster treats
// an acquisition by the holder that already holds the key, under the same
// lease secret (Client.LeaseSecret), as a retry.
func WithHolder(holder string) LeaseOption { return func(c *leaseConfig) { c.holder = holder } }

// WithLogger sends the lease's events (lease_acquired, lease_renew_failed,
// lease_lost, lease_released) to l instead of the Client's logger.
func WithLogger(l hclog.Logger) LeaseOption { return func(c *leaseConfig) { c.log = l } }

// WithMargin sets the lease's margin (default DefaultMargin(TTL)): the
// holder treats the lease as lost at SentAt of its last successful acquire
// or renewal + TTL − d. It must be between TTL/100 and TTL/2.
func WithMargin(d time.Duration) LeaseOption { return func(c *leaseConfig) { c.margin = d } }

// WithRenewInterval sets how often the lease is renewed (default TTL/3,
// ±10% jitter). It must be between TTL/20 and (TTL − margin)/2, so that at
// least two renewals fit before the local deadline. Each renewal, its
// retries included, is bounded by the interval: a renewal that fails or
// hangs is reported (Hooks.OnRenewFailed, lease_renew_failed) within one
// interval, and retried. A shorter interval notices trouble sooner and
// costs more requests.
func WithRenewInterval(d time.Duration) LeaseOption { return func(c *leaseConfig) { c.interval = d } }

// WithLoseOnRenewFailure ends the lease at its first failed renewal
// instead of retrying until the local deadline: its Err matches
// ErrRenewFailed, and OnRenewFailed then OnLost run. A renewal fails when
// an attempt is refused, answers 5xx or 429, times out, or when no leader
// answers within the renewal interval; only the answers of a leader change
// (503 no_leader or leadership_lost, a refused or broken connection) are
// retried within the interval, as a hand-over takes milliseconds. For
// holders whose rule is "any renewal failure or timeout drops
// leadership": they stop as soon as they hear of trouble, at the cost of
// dropping leases that a retry would have kept. Release the lost lease
// (Election.Run does), so that another holder need not wait for its TTL.
func WithLoseOnRenewFailure() LeaseOption { return func(c *leaseConfig) { c.strict = true } }

// WithHooks sets callbacks for metrics and tracing of the lease.
func WithHooks(h Hooks) LeaseOption { return func(c *leaseConfig) { c.hooks = h } }

// Hooks are callbacks on the life of a kept-alive lease, for metrics. Each
// may be nil. They run on the goroutine that observed the event (the
// Client's renewer, or the caller of Acquire, Err or Release), possibly
// concurrently for different leases; they must return quickly and must not
// call Release. A hook runs after the event took effect: when OnLost runs,
// the lease's context is already cancelled.
type Hooks struct {
	// OnAcquired: the lease was granted (once per lease).
	OnAcquired func(l *Lease)
	// OnRenewed: a renewal succeeded; latency is the duration of the bulk
	// call that carried it, retries included.
	OnRenewed func(l *Lease, latency time.Duration)
	// OnRenewFailed: a renewal failed transiently, or did not succeed
	// within one renewal interval; the lease stays held until its local
	// deadline and the renewal is retried (with WithLoseOnRenewFailure,
	// OnLost follows at once).
	OnRenewFailed func(l *Lease, err error)
	// OnLost: the lease ended without Release; err is the lease's Err
	// (ErrLeaseLost or ErrLeaseExpiredLocally). Once per lease.
	OnLost func(l *Lease, err error)
}

// Lease is a lease that the Client keeps alive: its renewer renews it
// every renewal interval (TTL/3 by default, WithRenewInterval; ±10%
// jitter), together with every other lease of the Client, until it is
// lost or released.
//
// The lease is lost, and its context cancelled, at the first of:
//   - a refusal of a renewal (404 lease_lost: the lease expired on the
//     leader, was superseded, or an operator revoked it, disabled its key
//     or prohibited its holder; not_holder or unknown when the cluster has
//     no trace of it, e.g. after a restore of an older snapshot). Err
//     matches ErrLeaseLost and errors.As gives the *APIError with its
//     Reason.
//   - its local deadline, SentAt of the last successful acquire or
//     renewal + TTL − margin, passing without a successful renewal, even
//     while renewals are still being retried after transient failures
//     (no leader, 503, timeouts, refused connections). Err matches
//     ErrLeaseExpiredLocally. The cluster never frees the lease before
//     SentAt + TTL, so the holder stops before anyone else can start.
//   - with WithLoseOnRenewFailure, its first failed renewal. Err matches
//     ErrRenewFailed.
//
// A lost lease stays lost: a late successful answer does not revive it.
// Acquire the key again for a new Lease.
//
// All methods are safe for concurrent use.
type Lease struct {
	k        *keeper
	key      string
	holder   string
	token    uint64
	ttl      time.Duration
	margin   time.Duration
	interval time.Duration
	strict   bool              // WithLoseOnRenewFailure
	election string            // the Election it leads, if any
	metadata map[string]string // guarded by k.mu
	load     *float64          // ReportLoad; guarded by k.mu
	log      hclog.Logger
	hooks    Hooks

	// ctx is the lease's own context, made by Acquire from its caller's
	// context without its cancellation: it ends with the lease. It is
	// handed out by Context, never used to bound a call.
	ctx    context.Context
	cancel context.CancelCauseFunc

	// Guarded by k.mu.
	state     leaseState
	err       error     // why the lease ended
	deadline  time.Time // local safety deadline
	nextRenew time.Time
	inflight  bool  // a renewal of this lease is in flight
	failures  int   // transient renewal failures since the last success
	lastErr   error // the last transient failure
	freed     bool  // nothing is left for this Lease to release
}

type leaseState int

const (
	leaseHeld leaseState = iota
	leaseLost
	leaseReleased
)

// Key returns the lease's key.
func (l *Lease) Key() string { return l.key }

// Token returns the lease's fencing token. Send it with every write the
// holder makes under the lease, and have the store reject tokens below the
// highest it has seen (see FenceValidator).
func (l *Lease) Token() uint64 { return l.token }

// Holder returns the holder identity the lease is held under.
func (l *Lease) Holder() string { return l.holder }

// TTL returns the lease's TTL as the cluster granted it.
func (l *Lease) TTL() time.Duration { return l.ttl }

// Metadata returns a copy of the lease's metadata: what it was acquired
// with, or set with SetMetadata since.
func (l *Lease) Metadata() map[string]string {
	l.k.mu.Lock()
	defer l.k.mu.Unlock()
	return maps.Clone(l.metadata)
}

// ReportLoad sets the load of the lease's key that its renewals report
// from now on (until the next ReportLoad), in a unit the application
// chooses: requests per second, bytes, CPU. Report a level, not a count
// since the last renewal: the leader keeps a decayed average of the
// reports of each key (half-life 30 s by default), shown by the group
// view (GroupsAPI.Get), and a group that balances by load places its keys
// by it. A load that is NaN or outside [0, wire.MaxLoad] fails with
// ErrInvalid and changes nothing. A server older than load reports
// refuses them: the keep-alive then renews without loads (the lease is
// not lost) and reports none from then on.
func (l *Lease) ReportLoad(load float64) error {
	if err := checkLoad("load", load); err != nil {
		return err
	}
	l.k.mu.Lock()
	defer l.k.mu.Unlock()
	l.load = &load
	return nil
}

// ReportHolderLoad sets the total load of holder (in the unit of
// Lease.ReportLoad) that the renewals of its leases report from now on:
// what its keys cost and whatever else it runs. The leader keeps a decayed
// average per worker (the holder up to its last '#', as a worker's
// holders are), shown by the group view. A load that is NaN or outside
// [0, wire.MaxLoad], or a holder of which the Client keeps no lease, fails
// with ErrInvalid and changes nothing. The total is forgotten when the
// holder's last lease ends: report it again after the next Acquire.
// Loads are reported until a server refuses them (one older than load
// reports): the keep-alive then renews without them, and reports none
// from then on.
func (c *Client) ReportHolderLoad(holder string, load float64) error {
	if err := checkLoad("load", load); err != nil {
		return err
	}
	c.keep.mu.Lock()
	defer c.keep.mu.Unlock()
	if !c.keep.holdsLocked(holder) {
		return fmt.Errorf("%w: the Client keeps no lease of holder %q to report its load with", ErrInvalid, holder)
	}
	c.keep.totals[holder] = load
	return nil
}

// checkLoad refuses a load that the cluster would refuse.
func checkLoad(what string, load float64) error {
	if p := wire.LoadProblem(load); p != "" {
		return fmt.Errorf("%w: %s %s", ErrInvalid, what, p)
	}
	return nil
}

// Done returns a channel that is closed when the lease ends (lost or
// released). It is Context().Done().
func (l *Lease) Done() <-chan struct{} { return l.ctx.Done() }

// Context returns a context that is cancelled the moment the lease ends,
// with Err as its cause (context.Cause). It carries the values of the
// context given to Acquire, but not its cancellation or deadline: the
// lease outlives the call that acquired it. Run the holder's work under
// it. Its Err checks the local deadline at the call, as Lease.Err does,
// so a holder that wakes from a pause past the deadline sees the loss at
// its first check, before the renewer's timer has run.
func (l *Lease) Context() context.Context { return leaseContext{l.ctx, l} }

// leaseContext is a context that ends with a lease, and whose Err checks
// the lease's local deadline at the call.
type leaseContext struct {
	context.Context
	lease *Lease
}

// Err is the context's error, after ending the lease if its deadline has
// passed (which cancels the context before Err reads it).
func (c leaseContext) Err() error {
	c.lease.Err()
	return c.Context.Err()
}

// Deadline returns the lease's local safety deadline: SentAt of the last
// successful acquire or renewal + TTL − margin. The holder may act until
// then; the renewer moves it forward with each renewal.
func (l *Lease) Deadline() time.Time {
	l.k.mu.Lock()
	defer l.k.mu.Unlock()
	return l.deadline
}

// Err returns nil while the lease is held, and why it ended afterwards: an
// error matching ErrLeaseLost (with the server's *APIError and its Reason
// wrapped), ErrLeaseExpiredLocally, or ErrReleased.
//
// Err checks the local deadline itself, so a process that wakes from a
// pause past the deadline sees the loss at its first call, even before the
// renewer goroutine has run: call Err right before an action that must not
// happen without the lease (and fence the action with Token anyway).
func (l *Lease) Err() error {
	l.k.mu.Lock()
	var evs []leaseEvent
	if l.state == leaseHeld && passed(time.Now(), l.deadline) {
		evs = append(evs, l.k.endLocked(l, leaseLost, l.expiredErr()))
	}
	err := l.err
	l.k.mu.Unlock()
	fire(evs)
	return err
}

// Release hands the key back at once: it stops the renewals, cancels the
// lease's context (Err becomes ErrReleased), then releases the lease on
// the cluster, which grants the key to its first waiter in the same log
// entry. It is idempotent: once a release succeeded, later calls return
// nil at once. A lease that was lost is still released on the cluster
// (when it expired locally the cluster may hold it for a moment longer),
// unless the cluster refused it already; a lease whose renewal was refused
// because an operator revoked it, disabled its key or prohibited its
// holder is released too (the cluster holds it until its deadline, and the
// release frees it as soon as the holder says it stopped). An error means the release
// request failed; the lease is not renewed any more and expires after its
// TTL; call Release again to retry.
//
// A lease that has already ended (lost, or released with a failed
// request) is not released on the cluster, and Release returns nil, when
// this Client keeps or is acquiring a newer lease of the same holder on
// the same key. The cluster answers an acquisition by the holder that
// still holds the key with the lease it holds, same token, so the old
// lease may be the new one, and releasing it would free the key under its
// new owner. The old lease on the cluster, if any, is then the new lease,
// or it is left to expire after its TTL (an acquisition that fails with
// an unknown outcome releases it itself; see Acquire). Deferring Release
// of every acquired lease is therefore safe.
func (l *Lease) Release(ctx context.Context) error {
	k := l.k
	id := leaseID{l.holder, l.key}
	k.mu.Lock()
	if l.freed {
		k.mu.Unlock()
		return nil
	}
	if l.state != leaseHeld && k.supersededLocked(l) {
		l.freed = true // the cluster's lease, if any, is no longer ours to free
		k.mu.Unlock()
		l.log.Debug("release skipped: the key is kept again by this holder", "key", l.key, "holder", l.holder, "token", l.token)
		return nil
	}
	var evs []leaseEvent
	if l.state == leaseHeld {
		evs = append(evs, k.endLocked(l, leaseReleased, ErrReleased))
	}
	// Until the release is answered no new Acquire of this key by this
	// holder may start: it would get this very lease back (same token),
	// and this release would free it under it.
	k.releasing[id]++
	k.mu.Unlock()
	fire(evs)

	_, err := k.c.Leases().Release(ctx, l.key, l.holder, l.token)

	k.mu.Lock()
	if k.releasing[id]--; k.releasing[id] == 0 {
		delete(k.releasing, id)
	}
	if err == nil || errors.Is(err, ErrNotHolder) || errors.Is(err, ErrWrongSecret) {
		// not_holder: the cluster has no lease of ours under that token
		// (say, after a restore of an older snapshot); wrong_secret: the
		// lease is not ours (a lease of the holder's name acquired under
		// another secret). A retry would only be refused again.
		l.freed = true
	}
	k.mu.Unlock()
	if err != nil {
		return fmt.Errorf("release %q (token %d): %w", l.key, l.token, err)
	}
	l.log.Debug("lease_released", "key", l.key, "holder", l.holder, "token", l.token)
	return nil
}

// expiredErr is the Err of a lease whose local deadline passed; k.mu held.
func (l *Lease) expiredErr() error {
	if l.lastErr != nil {
		return fmt.Errorf("%w: lease %q (token %d), deadline %s, after %d failed renewals: %w",
			ErrLeaseExpiredLocally, l.key, l.token, l.deadline.Format(time.RFC3339Nano), l.failures, l.lastErr)
	}
	return fmt.Errorf("%w: lease %q (token %d), deadline %s", ErrLeaseExpiredLocally, l.key, l.token, l.deadline.Format(time.RFC3339Nano))
}

// Acquire acquires key and keeps the lease alive until it is lost or
// released; see Lease. Without options it acquires under the Client's
// holder with DefaultLeaseTTL and does not wait: a key held by another
// holder is refused with an error matching ErrHeld (errors.As gives the
// *APIError whose Lease is the current one). WithWait queues for the key.
// ctx bounds the acquisition only, not the lease.
//
// Acquiring a key that this Client already keeps alive for the same holder
// fails with ErrDuplicateLease rather than returning a second *Lease for
// the same lease: keep and share the *Lease you have. With WithMetadata,
// though, it updates the metadata of the kept lease (Lease.SetMetadata;
// WithTTL and WithWait are ignored) and returns that same *Lease: the
// caller then shares it with whoever acquired it first (AcquireNew never
// does this).
//
// The lease's local deadline starts from Meta.SentAt of the acquire. When
// the acquisition took longer than a renewal interval (it waited in the
// queue), Acquire renews once before it returns, so the lease starts with
// its full TTL − margin ahead.
//
// If ctx ends, or the outcome is unknown after the retries, while the
// cluster may have granted the key, Acquire reads the key and releases it
// if it is held by this holder (best effort, bounded by a few seconds), so
// that a caller who gave up does not keep others waiting for a TTL.
//
// The first lease of a Client starts its renewer goroutine; the goroutine
// ends when the Client holds no lease any more, after cancelling its
// renewals in flight.
func (c *Client) Acquire(ctx context.Context, key string, opts ...LeaseOption) (*Lease, error) {
	return c.acquire(ctx, key, true, opts)
}

// acquire is Acquire, or AcquireNew when updateKept is false.
func (c *Client) acquire(ctx context.Context, key string, updateKept bool, opts []LeaseOption) (*Lease, error) {
	cfg, err := c.leaseOptions(opts)
	if err != nil {
		return nil, err
	}
	if key == "" {
		return nil, fmt.Errorf("%w: key is empty", ErrInvalid)
	}
	id := leaseID{cfg.holder, key}
	if l := c.keep.kept(id); l != nil && cfg.metadata != nil && updateKept {
		if err := l.SetMetadata(ctx, cfg.metadata); err != nil {
			return nil, err
		}
		return l, nil
	}
	if err := c.keep.reserve(id); err != nil {
		return nil, err
	}
	defer c.keep.unreserve(id)
	info, meta, err := c.acquireWaiting(ctx, key, cfg)
	if err != nil {
		return nil, err
	}
	return c.keep.start(ctx, key, info, meta, cfg)
}

// leaseOptions applies opts over the defaults and validates them.
func (c *Client) leaseOptions(opts []LeaseOption) (leaseConfig, error) {
	cfg := leaseConfig{ttl: DefaultLeaseTTL, holder: c.Holder()}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.ttl <= 0 {
		return cfg, fmt.Errorf("%w: TTL must be positive, got %v", ErrInvalid, cfg.ttl)
	}
	if cfg.wait < 0 {
		return cfg, fmt.Errorf("%w: wait must not be negative, got %v", ErrInvalid, cfg.wait)
	}
	if cfg.holder == "" || len(cfg.holder) > maxHolderBytes {
		return cfg, fmt.Errorf("%w: holder must be 1 to %d bytes, got %d", ErrInvalid, maxHolderBytes, len(cfg.holder))
	}
	if cfg.margin == 0 {
		cfg.margin = DefaultMargin(cfg.ttl)
	} else if cfg.margin < cfg.ttl/100 || cfg.margin > cfg.ttl/2 {
		return cfg, fmt.Errorf("%w: margin must be between TTL/100 (%v) and TTL/2 (%v), got %v", ErrInvalid, cfg.ttl/100, cfg.ttl/2, cfg.margin)
	}
	if lo, hi := cfg.ttl/20, (cfg.ttl-cfg.margin)/2; cfg.interval != 0 && (cfg.interval < lo || cfg.interval > hi) {
		return cfg, fmt.Errorf("%w: renew interval must be between TTL/20 (%v) and (TTL − margin)/2 (%v), got %v", ErrInvalid, lo, hi, cfg.interval)
	}
	if cfg.log == nil {
		cfg.log = c.log.Named("lease")
	}
	return cfg, nil
}

// acquireWaiting acquires key, waiting as cfg.wait says: in blocking
// requests of at most waitChunk, retrying transient failures while the
// wait lasts. On an error whose outcome is unknown it releases the key if
// the cluster granted it to cfg.holder after all.
func (c *Client) acquireWaiting(ctx context.Context, key string, cfg leaseConfig) (*LeaseInfo, *Meta, error) {
	var end time.Time // zero: no wait, or forever
	if cfg.wait > 0 && cfg.wait != WaitForever {
		end = time.Now().Add(cfg.wait)
	}
	chunk := waitChunk
	for failures := 0; ; {
		wait := serverWait(ctx, cfg.wait, end, chunk)
		asked := time.Now()
		info, meta, err := c.Leases().Acquire(ctx, key, AcquireRequest{
			Holder: cfg.holder, TTL: cfg.ttl, Wait: wait, Metadata: cfg.metadata,
		})
		if err == nil {
			return info, meta, nil
		}
		waiting := cfg.wait > 0 && ctx.Err() == nil && (end.IsZero() || time.Now().Before(end))
		held := errors.Is(err, ErrHeld)
		var ae *APIError
		switch {
		case waiting && errors.As(err, &ae) && ae.Code == wire.CodeInvalidWait && wait > time.Second:
			chunk = wait / 2 // the servers' max-wait is below our chunk
			continue
		case waiting && held && wait > 0 && time.Since(asked) >= wait/2:
			failures = 0 // a chunk of the wait ended: queue again
			continue
		case waiting && (held || transient(err) && !isSetupError(err)):
			// A transient failure, or a refusal that came back long before
			// the wait asked for: back off rather than spin.
			failures++
			if cfg.election != "" && !held && (failures == 1 || failures%10 == 0) {
				cfg.log.Warn("leader_acquire_failed", "election", cfg.election, "key", key, "holder", cfg.holder,
					"failures", failures, "retrying", true, "error", err)
			}
			if serr := c.sleep(ctx, c.backoff(failures, retryAfter(err))); serr == nil {
				continue
			}
		}
		if outcomeUnknown(err) {
			c.abandon(ctx, key, cfg.holder)
		}
		if cfg.wait > 0 && ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			// The caller gave up while waiting: say so first.
			return nil, nil, fmt.Errorf("%w (last answer: %w)", ctx.Err(), err)
		}
		return nil, nil, err
	}
}

// serverWait is the wait to ask the server for in the next blocking
// acquire: at most chunk, at most what is left of the caller's wait, and
// short enough that the server answers before ctx's deadline.
func serverWait(ctx context.Context, want time.Duration, end time.Time, chunk time.Duration) time.Duration {
	if want <= 0 {
		return 0
	}
	w := chunk
	if !end.IsZero() {
		w = min(w, time.Until(end))
	}
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		w = min(w, left-min(left/10, time.Second))
	}
	if w < time.Millisecond {
		return 0
	}
	return w.Truncate(time.Millisecond)
}

// abandon releases key if the cluster holds it for holder: the best-effort
// clean-up of an acquisition whose outcome is unknown. The caller holds
// the reservation of (holder, key), so no Lease of this Client holds it.
func (c *Client) abandon(ctx context.Context, key, holder string) {
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	l, _, err := c.Leases().Get(actx, key, nil)
	if err != nil || !l.Held() || l.Holder != holder {
		return
	}
	if _, err := c.Leases().Release(actx, key, holder, l.Token); err != nil {
		c.log.Debug("release of an abandoned acquisition failed; it will expire", "key", key, "holder", holder, "token", l.Token, "error", err)
	}
}

// transient reports whether err may go away by itself: no answer, or an
// answer that says the server could not act now (429, 5xx). Everything
// else is a refusal that a retry would get again.
// Callers check their own context: a cancelled call looks transient.
func transient(err error) bool {
	var ae *APIError
	if !errors.As(err, &ae) {
		return true // no answer: connection refused or broken, timeout
	}
	return ae.StatusCode == http.StatusTooManyRequests || ae.StatusCode >= 500
}

// outcomeUnknown reports whether a failed write may have taken effect: the
// caller gave up, no answer came, or the server said it does not know.
func outcomeUnknown(err error) bool {
	if isSetupError(err) {
		return false // no tenure server got the request
	}
	var ae *APIError
	if !errors.As(err, &ae) {
		return true
	}
	return ae.StatusCode >= 500 && ae.Code != wire.CodeNoLeader
}

// retryAfter is the Retry-After of err's answer, if any.
func retryAfter(err error) time.Duration {
	var ae *APIError
	if errors.As(err, &ae) {
		return serverRetryAfter(ae)
	}
	return 0
}

// AcquireNew is Acquire, except that a key this Client already keeps for
// the holder fails with ErrDuplicateLease even when the options carry
// metadata: for callers that must never hand out one lease twice, as an
// Election, a semaphore and a placement worker (package client/worker).
func (c *Client) AcquireNew(ctx context.Context, key string, opts ...LeaseOption) (*Lease, error) {
	return c.acquire(ctx, key, false, opts)
}

// SetMetadata replaces the metadata of the lease on the cluster: it
// acquires the key again under the lease's holder and TTL with md, which
// the cluster answers with the same lease and token, md stored and the
// change logged. Readers of the key see md from then on; Metadata returns
// it. md must have at least one entry (metadata can be replaced, not
// cleared) and is copied.
//
// Like a renewal, the acquisition restarts the lease's deadline on the
// leader, and the local deadline moves to its SentAt + TTL − margin. A
// lease that has ended returns its Err. If the cluster had ended the lease
// already (it answers with a new grant), the new grant is released and
// SetMetadata fails with an error matching ErrLeaseLost; the renewer
// notices the loss at its next renewal.
func (l *Lease) SetMetadata(ctx context.Context, md map[string]string) error {
	if len(md) == 0 {
		return fmt.Errorf("%w: metadata must have at least one entry", ErrInvalid)
	}
	md = maps.Clone(md)
	if err := l.Err(); err != nil {
		return err
	}
	k := l.k
	info, meta, err := k.c.Leases().Acquire(ctx, l.key, AcquireRequest{Holder: l.holder, TTL: l.ttl, Metadata: md})
	if err != nil {
		return fmt.Errorf("set metadata of %q (token %d): %w", l.key, l.token, err)
	}
	if meta.Created || info.Token != l.token {
		k.mu.Lock()
		superseded := k.supersededLocked(l)
		k.mu.Unlock()
		if !superseded {
			k.c.releaseQuietly(ctx, l.key, l.holder, info.Token)
		}
		return fmt.Errorf("%w: lease %q (token %d) had ended on the cluster before its metadata changed (the cluster granted token %d)",
			ErrLeaseLost, l.key, l.token, info.Token)
	}
	k.mu.Lock()
	if l.state == leaseHeld {
		l.metadata = md
		if d := meta.SentAt.Add(l.ttl - l.margin); d.After(l.deadline) {
			l.deadline = d
		}
	}
	k.mu.Unlock()
	l.log.Info("lease_metadata_changed", "key", l.key, "holder", l.holder, "token", l.token)
	return nil
}

// kept returns the lease this Client keeps alive for id, or nil.
func (k *keeper) kept(id leaseID) *Lease {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.leases[id]
}
