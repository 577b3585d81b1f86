package client

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
)

// MaxSemaphoreSlots is the largest number of slots of AcquireSemaphore: a
// waiting acquirer keeps one blocking request per slot.
const MaxSemaphoreSlots = 64

// SlotKey returns the lease key of slot i of the semaphore key:
// "<key>/slot-<i>".
func SlotKey(key string, i int) string {
	return key + "/slot-" + strconv.Itoa(i)
}

// AcquireSemaphore takes one of the slots of the semaphore key, so that at
// most slots holders hold it at once, and returns the slot's lease, kept
// alive like the leases of Acquire. Slot i is the lease key
// SlotKey(key, i); every user of a semaphore must agree on its number of
// slots. The options are those of Acquire; WithWait says how long to wait
// for a slot (default: not at all).
//
// The algorithm, in which a holder takes exactly one slot:
//
//  1. Read the slots (one linearizable list of the prefix). If the holder
//     already holds one (a retry), acquire that one again: the cluster
//     answers with the same lease.
//  2. Try the free slots in order, each with a non-blocking acquire; the
//     first granted is the holder's. A slot taken meanwhile is skipped.
//  3. If none was granted and WithWait allows, queue on every slot at once
//     with blocking acquires (FIFO per slot on the cluster). The first
//     grant wins; the other requests are cancelled, and a slot granted to
//     one of them all the same is released again at once.
//
// It fails with ErrHeld when every slot is held and the wait (if any)
// ended, and with ErrDuplicateLease when this Client already keeps a slot
// of key for the holder.
func (c *Client) AcquireSemaphore(ctx context.Context, key string, slots int, opts ...LeaseOption) (*Lease, error) {
	if slots < 1 || slots > MaxSemaphoreSlots {
		return nil, fmt.Errorf("%w: a semaphore has 1 to %d slots, got %d", ErrInvalid, MaxSemaphoreSlots, slots)
	}
	if key == "" {
		return nil, fmt.Errorf("%w: key is empty", ErrInvalid)
	}
	cfg, err := c.leaseOptions(opts)
	if err != nil {
		return nil, err
	}
	keys := make([]string, slots)
	for i := range keys {
		keys[i] = SlotKey(key, i)
	}
	for _, k := range keys {
		if c.keep.kept(leaseID{cfg.holder, k}) != nil {
			return nil, fmt.Errorf("%w: slot %q of semaphore %q", ErrDuplicateLease, k, key)
		}
	}

	held, _, err := c.Leases().List(ctx, &ListOptions{Prefix: key + "/slot-"}, nil)
	if err != nil {
		return nil, fmt.Errorf("semaphore %q: read the slots: %w", key, err)
	}
	busy := make(map[string]bool)
	for _, l := range held {
		if !l.Held() {
			continue
		}
		if l.Holder == cfg.holder && slices.Contains(keys, l.Key) {
			return c.acquire(ctx, l.Key, false, append(slices.Clone(opts), WithWait(0)))
		}
		busy[l.Key] = true
	}

	var lastErr error
	for _, k := range keys {
		if busy[k] {
			continue
		}
		l, err := c.acquire(ctx, k, false, append(slices.Clone(opts), WithWait(0)))
		if err == nil {
			return l, nil
		}
		if !errors.Is(err, ErrHeld) {
			return nil, fmt.Errorf("semaphore %q: %w", key, err)
		}
		lastErr = err
	}
	if cfg.wait == 0 {
		if lastErr == nil {
			lastErr = fmt.Errorf("%w: all %d slots are held", ErrHeld, slots)
		}
		return nil, fmt.Errorf("semaphore %q: %w", key, lastErr)
	}
	return c.waitForSlot(ctx, key, keys, opts)
}

// waitForSlot queues on every slot at once and keeps the first one
// granted.
func (c *Client) waitForSlot(ctx context.Context, key string, keys []string, opts []LeaseOption) (*Lease, error) {
	type outcome struct {
		l   *Lease
		err error
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make(chan outcome, len(keys))
	for _, k := range keys {
		go func() {
			l, err := c.acquire(wctx, k, false, opts)
			out <- outcome{l, err}
		}()
	}
	var (
		won  *Lease
		errs []error
	)
	for range keys {
		o := <-out
		switch {
		case o.err == nil && won == nil:
			won = o.l
			cancel() // stop waiting on the other slots
		case o.err == nil:
			// Granted too, just after the winner: hand it back at once.
			if err := o.l.Release(context.WithoutCancel(ctx)); err != nil {
				c.log.Debug("release of an extra semaphore slot failed; it will expire", "key", o.l.Key(), "error", err)
			}
		default:
			errs = append(errs, o.err)
		}
	}
	if won != nil {
		return won, nil
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("semaphore %q: %w", key, ctx.Err())
	}
	// Every slot refused: report the most telling reason.
	for _, err := range errs {
		if !errors.Is(err, ErrHeld) {
			return nil, fmt.Errorf("semaphore %q: %w", key, err)
		}
	}
	return nil, fmt.Errorf("semaphore %q: all %d slots stayed held: %w", key, len(keys), errs[0])
}
