package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// DefaultFenceRefresh is how long a FenceValidator trusts its cached
// latest token for a key before it confirms it with a read again.
const DefaultFenceRefresh = time.Second

// MaxFenceCacheAge is the longest age WithCacheWhenUnreachable accepts.
const MaxFenceCacheAge = time.Hour

// FenceOption configures a FenceValidator.
type FenceOption func(*FenceValidator)

// WithRefreshAfter sets how long the validator accepts a token equal to
// its cached latest token for a key without reading the key again
// (default DefaultFenceRefresh). Zero confirms every such token with a
// read. A token below the cached one is refused without a read whatever
// this setting.
func WithRefreshAfter(d time.Duration) FenceOption {
	return func(v *FenceValidator) { v.refreshAfter = d }
}

// WithCacheWhenUnreachable lets Check decide from its cache while the
// cluster cannot be reached (no answer, 429 or 5xx): a token equal to the
// cached latest token of its key, confirmed by the cluster less than maxAge
// before, is accepted; a lower one is refused, as always; anything else
// fails as it does without the option, deciding nothing. Off by default;
// maxAge must be in (0, MaxFenceCacheAge], or Check fails with ErrInvalid.
//
// The risk, taken on purpose: while the cluster cannot be reached, another
// holder may have been granted the key, up to maxAge ago, and the writes
// of the holder it superseded are accepted until the cached entry is
// maxAge old. Only the store's own token check keeps such writes out (see
// FenceValidator); choose maxAge as the time a superseded writer may go on
// writing unnoticed.
func WithCacheWhenUnreachable(maxAge time.Duration) FenceOption {
	return func(v *FenceValidator) { v.cacheAge = maxAge }
}

// FenceValidator checks fencing tokens for a service that consumes what
// lease holders write (a storage service, a queue, an API in front of a
// database). Each write carries the key its writer holds and the Lease's
// Token; Check refuses the token when a newer one exists for that key,
// which means the writer has been superseded: its lease expired or was
// revoked while it was paused or cut off, and another holder has the key.
//
// What Check guarantees: it returns nil only if the token was the latest
// token granted for the key at some moment during the call, or, from the
// cache, at most RefreshAfter before it (the key may be held or free then:
// a holder that just released the key is not refused, because no newer
// holder exists). It returns ErrStaleToken when a newer token for the key
// is known: from the cache, with no request, or from a linearizable read
// of the key; and when the token was never granted for the key (above its
// latest). Any other error (the cluster cannot be reached) means nothing
// was decided: refuse the write, or retry.
//
// What it does not guarantee: that the token is still the latest when the
// write it guards is applied. A new holder can be granted the key between
// Check and the write. Check is a gate that stops stale writers early and
// cheaply; exclusion comes from the store itself checking the token
// atomically with the write (keep the highest token seen per key and
// refuse lower ones in the same transaction, as in the fenced-write
// example). Tokens of successive holders of a key strictly increase, so
// that check is safe against any paused holder.
//
// The validator keeps one entry per key it has checked: the highest token
// it has seen confirmed by the cluster. Concurrent checks of one key share
// one read. A FenceValidator is safe for concurrent use and starts no
// goroutines.
type FenceValidator struct {
	c            *Client
	refreshAfter time.Duration
	cacheAge     time.Duration // WithCacheWhenUnreachable; 0: off

	mu      sync.Mutex
	entries map[string]*fenceEntry
}

// fenceEntry is what the validator knows of one key.
type fenceEntry struct {
	token      uint64        // the highest token the cluster confirmed
	readAt     time.Time     // when the read that confirmed it was sent
	refreshing chan struct{} // closed when the read in flight ends
}

// NewFenceValidator returns a validator that reads keys through c.
func NewFenceValidator(c *Client, opts ...FenceOption) *FenceValidator {
	v := &FenceValidator{c: c, refreshAfter: DefaultFenceRefresh, entries: make(map[string]*fenceEntry)}
	for _, o := range opts {
		o(v)
	}
	return v
}

// Check decides whether a write fenced with token on key may go ahead; see
// FenceValidator for what nil and ErrStaleToken mean. A token below the
// cached latest token for key is refused without a request. A token above
// it, a key not cached, or a cached entry older than RefreshAfter make
// Check read the key (linearizable) first.
func (v *FenceValidator) Check(ctx context.Context, key string, token uint64) error {
	if token == 0 {
		return fmt.Errorf("%w: fencing token 0 is never granted", ErrInvalid)
	}
	if v.cacheAge < 0 || v.cacheAge > MaxFenceCacheAge {
		return fmt.Errorf("%w: WithCacheWhenUnreachable: the age must be in (0, %v], got %v", ErrInvalid, MaxFenceCacheAge, v.cacheAge)
	}
	for {
		v.mu.Lock()
		e := v.entries[key]
		if e == nil {
			e = &fenceEntry{}
			v.entries[key] = e
		}
		switch {
		case token < e.token:
			latest := e.token
			v.mu.Unlock()
			return staleToken(key, token, latest)
		case token == e.token && time.Since(e.readAt) < v.refreshAfter:
			v.mu.Unlock()
			return nil
		case e.refreshing != nil:
			wait := e.refreshing
			v.mu.Unlock()
			select {
			case <-wait:
				continue // decide with what that read found
			case <-ctx.Done():
				return fmt.Errorf("fence check of %q: %w", key, ctx.Err())
			}
		}
		done := make(chan struct{})
		e.refreshing = done
		v.mu.Unlock()

		sent := time.Now()
		current, err := v.latest(ctx, key)

		v.mu.Lock()
		e.refreshing = nil
		close(done)
		if err == nil {
			if current > e.token {
				e.token = current
			}
			if current == e.token {
				e.readAt = sent
			}
		}
		latest, age := e.token, time.Since(e.readAt)
		v.mu.Unlock()
		switch {
		case err != nil && v.cacheAge > 0 && transient(err) && ctx.Err() == nil && token == latest && age < v.cacheAge:
			return nil // the cluster cannot be reached: the cached verdict, as the caller chose
		case err != nil:
			return fmt.Errorf("fence check of %q: %w", key, err)
		case token < latest:
			return staleToken(key, token, latest)
		case token > current:
			return fmt.Errorf("%w: token %d was never granted for %q (its latest is %d)", ErrStaleToken, token, key, current)
		}
		return nil
	}
}

// latest reads the latest token granted for key: the token of the holder,
// or of the last holder of a free key; 0 for a key never acquired.
func (v *FenceValidator) latest(ctx context.Context, key string) (uint64, error) {
	l, _, err := v.c.Leases().Get(ctx, key, nil)
	if errors.Is(err, ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return l.Token, nil
}

func staleToken(key string, token, latest uint64) error {
	return fmt.Errorf("%w: token %d for %q, but token %d was granted since", ErrStaleToken, token, key, latest)
}
