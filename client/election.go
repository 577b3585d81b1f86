package client

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// ElectionKey returns the lease key of the election name:
// "elections/<name>", or name itself when it contains a slash (so that
// "scheduler" is "elections/scheduler" and "ccm/scheduler/leader" is
// used as is).
func ElectionKey(name string) string {
	if strings.Contains(name, "/") {
		return name
	}
	return "elections/" + name
}

// Election elects one leader among the processes that campaign for the
// same name: the leader is the holder of the election's lease key
// (ElectionKey), so at most one process leads at a time and each
// leadership has its own fencing token. Make one with Client.Election.
//
// Leadership is a Lease: it ends the moment the lease is lost (a refused
// renewal, or its local deadline passing without one; see Lease), and the
// next campaigner is granted the key by the cluster when the leader
// resigns (at once, in the same log entry as the release) or when its
// lease expires (TTL after its last renewal was sent; a leader process
// that dies is replaced within TTL plus the time to elect a Raft leader if
// the server it used died with it).
//
// Candidates in one process need distinct holders (WithHolder): the
// cluster treats an acquisition by the holder that leads, under the
// Client's lease secret, as a retry, and the Client refuses it with
// ErrDuplicateLease.
//
// An Election is safe for concurrent use.
type Election struct {
	c    *Client
	name string
	key  string
	opts []LeaseOption

	mu      sync.Mutex
	current *Leadership
}

// Election returns the election name of c. The options are those of
// Acquire: WithTTL (default 10s: the longest a dead leader goes
// unreplaced), WithMetadata (published to everyone who reads the leader,
// e.g. the leader's address), WithHolder (the candidate's identity,
// default Client.Holder), WithMargin, WithLogger and WithHooks. WithWait is
// ignored: Campaign waits until its context ends.
func (c *Client) Election(name string, opts ...LeaseOption) *Election {
	return &Election{c: c, name: name, key: ElectionKey(name), opts: slices.Clone(opts)}
}

// Name returns the election's name.
func (e *Election) Name() string { return e.name }

// Key returns the lease key of the election.
func (e *Election) Key() string { return e.key }

// Leadership is one term of leadership of this process: it lasts until
// its lease is lost or it is resigned.
type Leadership struct {
	e     *Election
	lease *Lease
}

// Key returns the election's lease key.
func (l *Leadership) Key() string { return l.lease.Key() }

// Token returns the fencing token of this leadership: every write the
// leader makes should carry it, and the store should reject tokens below
// the highest it has seen. Tokens of successive leaders strictly increase.
func (l *Leadership) Token() uint64 { return l.lease.Token() }

// Holder returns the identity this process leads under.
func (l *Leadership) Holder() string { return l.lease.Holder() }

// Context returns a context that is cancelled the moment leadership ends
// (lost or resigned), with Err as its cause. Do the leader's work under
// it.
func (l *Leadership) Context() context.Context { return l.lease.Context() }

// Done is Context().Done().
func (l *Leadership) Done() <-chan struct{} { return l.lease.Done() }

// Err is nil while this process leads, and then why it stopped: see
// Lease.Err (ErrReleased after Resign).
func (l *Leadership) Err() error { return l.lease.Err() }

// Lease returns the lease behind the leadership.
func (l *Leadership) Lease() *Lease { return l.lease }

// Resign ends the leadership at once: its context is cancelled first, then
// the lease is released, and the cluster grants the key to the first
// campaigner waiting for it in the same log entry, without waiting for a
// TTL. Stop the leader's work before resigning; idempotent, as
// Lease.Release.
func (l *Leadership) Resign(ctx context.Context) error {
	leading := l.lease.Err() == nil
	err := l.lease.Release(ctx)
	l.e.mu.Lock()
	if l.e.current == l && err == nil {
		l.e.current = nil
	}
	l.e.mu.Unlock()
	if err != nil {
		return fmt.Errorf("resign %q: %w", l.e.name, err)
	}
	if leading {
		l.lease.log.Info("leader_resigned", "election", l.e.name, "key", l.lease.key, "holder", l.lease.holder, "token", l.lease.token)
	}
	return nil
}

// logger is the logger of e's leases: WithLogger's, or the Client's.
func (e *Election) logger() hclog.Logger {
	var cfg leaseConfig
	for _, o := range e.opts {
		o(&cfg)
	}
	if cfg.log != nil {
		return cfg.log
	}
	return e.c.log.Named("lease")
}

// Campaign blocks until this process leads, and returns its leadership.
// It queues on the cluster behind the current leader with blocking
// acquires, so it is granted the key the moment the key frees, and it
// retries transient failures (no leader, unreachable servers) with
// backoff for as long as ctx lasts. It returns an error when ctx ends, or
// when the cluster refuses the campaign for good (ErrInvalid,
// ErrDisabled, ErrProhibited, ErrDuplicateLease).
//
// A Campaign that ends with ctx while the cluster was granting it the key
// releases the key again (see Acquire), so it does not hold up the next
// candidate.
func (e *Election) Campaign(ctx context.Context) (*Leadership, error) {
	opts := append(slices.Clone(e.opts), WithWait(WaitForever), func(c *leaseConfig) { c.election = e.name })
	l, err := e.c.acquire(ctx, e.key, false, opts)
	if err != nil {
		if ctx.Err() == nil {
			e.logger().Error("leader_acquire_failed", "election", e.name, "key", e.key, "retrying", false, "error", err)
		}
		return nil, fmt.Errorf("campaign %q: %w", e.name, err)
	}
	l.log.Info("leader_acquired", "election", e.name, "key", e.key, "holder", l.holder, "token", l.token, "ttl", l.ttl)
	lead := &Leadership{e: e, lease: l}
	e.mu.Lock()
	e.current = lead
	e.mu.Unlock()
	return lead, nil
}

// Resign resigns the leadership that the last successful Campaign of e
// returned, if it has not ended; see Leadership.Resign. It returns nil
// when e does not lead.
func (e *Election) Resign(ctx context.Context) error {
	e.mu.Lock()
	lead := e.current
	e.mu.Unlock()
	if lead == nil {
		return nil
	}
	return lead.Resign(ctx)
}

// LeaderInfo describes the leader of an election as the cluster saw it.
type LeaderInfo struct {
	// Key is the election's lease key.
	Key string
	// OK is true when a leader holds the key, false when there is none
	// (the key is free, or was never acquired).
	OK bool
	// Holder is the leader's identity; empty when OK is false.
	Holder string
	// Token is the leader's fencing token; when OK is false, the token of
	// the last leader (0 if there never was one).
	Token uint64
	// Metadata is what the leader published with WithMetadata; nil when
	// OK is false.
	Metadata map[string]string
}

// same reports whether a and b name the same leadership.
func (a LeaderInfo) same(b LeaderInfo) bool {
	return a.OK == b.OK && a.Holder == b.Holder && a.Token == b.Token
}

// Leader reads the current leader with a linearizable read: OK is false
// when there is none. It is a snapshot: by the time it returns, the
// leadership may have changed.
func (e *Election) Leader(ctx context.Context) (LeaderInfo, error) {
	info, _, err := e.read(ctx, 0)
	if err != nil {
		return LeaderInfo{}, fmt.Errorf("leader of %q: %w", e.name, err)
	}
	return info, nil
}

// read reads the election's key; with index > 0 it blocks until the key
// changes past index. It returns the index to block on next.
func (e *Election) read(ctx context.Context, index uint64) (LeaderInfo, uint64, error) {
	var q *QueryOptions
	if index > 0 {
		q = &QueryOptions{WaitIndex: index}
	}
	l, meta, err := e.c.Leases().Get(ctx, e.key, q)
	var ae *APIError
	switch {
	case err == nil:
		next := meta.Index
		if next == 0 {
			next = l.ModifyIndex
		}
		info := LeaderInfo{Key: e.key, Token: l.Token}
		if l.Held() {
			info.OK, info.Holder, info.Metadata = true, l.Holder, maps.Clone(l.Metadata)
		}
		return info, next, nil
	case errors.As(err, &ae) && errors.Is(err, ErrNotFound):
		return LeaderInfo{Key: e.key}, ae.Index, nil // never acquired yet
	}
	return LeaderInfo{}, 0, err
}

// Observe reports the leader of the election as it changes: first the
// current one (or none, with OK false), then each new leader, and each
// time the election is left without one. It follows the key with blocking
// queries (QueryOptions.WaitIndex): it sends a request only after the
// previous one returned, and the cluster answers only when the key has
// changed (or after a wait of minutes), so it does not poll. While no
// lease was ever granted on the key, a change to any other key wakes it
// too; nothing is reported then.
//
// Observe starts one goroutine, which ends when ctx ends and then closes
// the channel; it also ends, closing the channel, if the cluster refuses
// the query for good (ErrInvalid: a malformed election name), after
// logging why. Transient failures are retried with backoff. The channel is
// unbuffered: a receiver that is slow misses intermediate leaders, never
// the latest one.
func (e *Election) Observe(ctx context.Context) <-chan LeaderInfo {
	ch := make(chan LeaderInfo)
	go func() {
		defer close(ch)
		var (
			index    uint64
			last     LeaderInfo
			sent     bool
			failures int
		)
		for ctx.Err() == nil {
			info, next, err := e.read(ctx, index)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				if errors.Is(err, ErrInvalid) {
					e.c.log.Error("observing the election failed", "election", e.name, "key", e.key, "error", err)
					return
				}
				failures++
				e.c.log.Debug("observing the election failed, retrying", "election", e.name, "error", err)
				if e.c.sleep(ctx, e.c.backoff(failures, retryAfter(err))) != nil {
					return
				}
				continue
			}
			failures = 0
			if next == 0 {
				// No index to block on (a server that does not report one):
				// wait before asking again rather than spin.
				if e.c.sleep(ctx, e.c.cfg.RetryMaxDelay) != nil {
					return
				}
			}
			index = next
			if sent && info.same(last) {
				continue
			}
			select {
			case ch <- info:
				last, sent = info, true
			case <-ctx.Done():
				return
			}
		}
	}()
	return ch
}

// leadershipKey is the context key of the leadership of Run's callback.
type leadershipKey struct{}

// LeadershipFromContext returns the leadership that the context given to
// RunConfig.OnStartedLeading belongs to (its Token fences the leader's
// writes), or nil for any other context.
func LeadershipFromContext(ctx context.Context) *Leadership {
	l, _ := ctx.Value(leadershipKey{}).(*Leadership)
	return l
}

// RunConfig are the callbacks of Election.Run.
type RunConfig struct {
	// OnStartedLeading does the leader's work; required. Run calls it on
	// Run's goroutine, only once Campaign has returned a leadership, with
	// a context that ends when the leadership ends (lost, or Run's context
	// ended); LeadershipFromContext(ctx) gives the leadership and its
	// fencing token. It should return promptly once ctx is done. Run
	// releases the lease only after it returned, so no successor is
	// elected while it runs, except after a loss: then a successor may be
	// elected TTL after the last renewal was sent, whatever the callback
	// does, which is why its writes must carry the token. If it returns
	// while still leading, Run resigns and campaigns again (behind the
	// candidates already waiting).
	OnStartedLeading func(ctx context.Context)
	// OnStoppedLeading, if set, is called after each leadership ended and
	// its lease was released.
	OnStoppedLeading func()
	// OnNewLeader, if set, is called with the identity (holder) of each new
	// leader, this process included, from a goroutine of its own that
	// follows the election with Observe; it may run concurrently with the
	// other callbacks. A new leadership is a new (holder, token): a holder
	// elected again after it resigned or lost the lease is reported again.
	// Like Observe, it may miss a leadership that ended before it was
	// seen, never the latest one.
	OnNewLeader func(identity string)
}

// resignTimeout bounds the release of Run's leadership after its
// callback returned.
const resignTimeout = 10 * time.Second

// Run campaigns, runs cfg.OnStartedLeading while this process leads,
// releases the lease once the callback returned, and campaigns again,
// until ctx ends. On the end of ctx the leadership context is cancelled,
// and the lease is released after the callback returned (as client-go's
// ReleaseOnCancel), so a successor is elected at once rather than after a
// TTL. Unlike client-go's leader election, losing the leadership does not
// end Run: it campaigns again, so a leader that was cut off from the
// cluster for a while rejoins the candidates.
//
// Run returns nil once ctx has ended and any leadership was released (or
// the release failed: the lease then expires after its TTL); it returns an
// error when Campaign fails for good (see Campaign) or cfg has no
// OnStartedLeading. Its Observe goroutine (for OnNewLeader) has ended when
// Run returns.
func (e *Election) Run(ctx context.Context, cfg RunConfig) error {
	if cfg.OnStartedLeading == nil {
		return fmt.Errorf("%w: RunConfig.OnStartedLeading is required", ErrInvalid)
	}
	if cfg.OnNewLeader != nil {
		octx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() {
			var last LeaderInfo // the last leadership reported
			for info := range e.Observe(octx) {
				if info.OK && (info.Holder != last.Holder || info.Token != last.Token) {
					last = info
					cfg.OnNewLeader(info.Holder)
				}
			}
		})
		defer func() {
			stop()
			wg.Wait()
		}()
	}
	for ctx.Err() == nil {
		lead, err := e.Campaign(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		work, stop := context.WithCancelCause(context.WithValue(lead.Context(), leadershipKey{}, lead))
		stopWithRun := context.AfterFunc(ctx, func() { stop(context.Cause(ctx)) })
		cfg.OnStartedLeading(work)
		stopWithRun()
		stop(nil)
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resignTimeout)
		if err := lead.Resign(rctx); err != nil {
			e.c.log.Warn("resign failed; the lease will expire", "election", e.name, "key", e.key, "token", lead.Token(), "error", err)
		}
		cancel()
		if cfg.OnStoppedLeading != nil {
			cfg.OnStoppedLeading()
		}
	}
	return nil
}
