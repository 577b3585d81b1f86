package lessor

import (
	"cmp"
	"container/heap"
	"sync"
	"time"

	"github.com/tenure-io/tenure/cluster/internal/clock"
	"github.com/tenure-io/tenure/fsm"
)

// Lessor keeps the deadline of every held lease while this node leads, on
// the monotonic clock: a map from key to entry plus a min-heap of the
// entries by deadline, so each lease has exactly one expiry entry.
//
// A follower's lessor is empty (secondary). Promote fills it when the node
// has established leadership; Demote empties it at once when leadership is
// lost. All methods are safe for concurrent use.
type Lessor struct {
	clock clock.Clock

	mu      sync.Mutex
	primary bool
	// frozen: a leader about to hand over has read every deadline for the
	// next leader (Freeze); no renewal may restart one until Unfreeze.
	// Promote and Demote leave it as it is: a leader that establishes
	// again while its Handover entry is on the way must not serve a
	// renewal that the entry does not know (cluster's Node.Handover unfreezes once a
	// LeaderEstablished follows the entry, or once this node is no longer
	// leader, so that its next establishment writes one).
	frozen  bool
	freezes uint64 // the number of the last Freeze that froze
	entries map[string]*deadlineEntry
	queue   deadlineQueue
	// changed gets a signal (never blocking) when the earliest deadline may
	// have moved earlier, so the proposer re-arms its timer.
	changed chan struct{}
}

type deadlineEntry struct {
	key      string
	token    uint64
	ttl      time.Duration
	deadline time.Time
	// modifyIndex is the ModifyIndex of the FSM record whose grant (or
	// promotion) last set the deadline; renewals do not change it. A
	// hand-over names it, so that a record changed by a later entry (its
	// holder's repeated acquire) is not given this deadline.
	modifyIndex uint64
	// renewed is the wall-clock time of the last grant or renewal, shown
	// to people only.
	renewed time.Time
	// expiring: the deadline passed and an Expire was handed out; no
	// renewal may revive the lease. The entry is out of the heap.
	expiring bool
	// ending is the reason an operator ended the lease ("revoked",
	// "disabled", "prohibited"), "" otherwise: no renewal may restart its
	// deadline, which frees it when it passes.
	ending string
	// queued is the deadline the entry is ordered by in the queue, never
	// later than deadline. A renewal, which only moves a deadline later,
	// leaves the queue alone; Expired puts an entry whose queued time came
	// but whose deadline did not back in its place then. So the renewal
	// path does no heap work, and the queue does it at most once per TTL
	// per lease instead of at every renewal.
	queued time.Time
	index  int // in queue; -1 when not queued
}

// New returns a secondary lessor whose deadlines are read on clock.
func New(clock clock.Clock) *Lessor {
	return &Lessor{
		clock:   clock,
		entries: make(map[string]*deadlineEntry),
		changed: make(chan struct{}, 1),
	}
}

// Promote makes the lessor primary and gives every held lease a full TTL
// from now, or, for a lease that the previous leader handed over with time
// left r (handed, Machine.PendingHandover, for the very record it names),
// carriedOver(r): leases carry remaining time
// across a graceful hand-over only, never across a failover. A lease that
// is ending in the FSM stays ending: its renewals are refused, and it
// frees when that deadline passes.
//
// held has one record per key (Machine.Held). The tables are built in one
// pass, sized for held, and the heap is ordered once at the end (heap.Init,
// linear) rather than by one push per lease: a new leader serves nothing
// until Promote returns. handed may be nil.
func (l *Lessor) Promote(held []*fsm.Lease, handed map[string]fsm.HandedLease) (carried int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.primary = true
	now, renewed := l.clock.Now(), time.Now()
	l.entries = make(map[string]*deadlineEntry, len(held))
	l.queue = make(deadlineQueue, 0, len(held))
	for _, lease := range held {
		deadline := now.Add(lease.TTL)
		if h, ok := handed[lease.Key]; ok && h.Names(lease) {
			deadline = now.Add(carriedOver(h.Left))
			carried++
		}
		e := &deadlineEntry{key: lease.Key, token: lease.Token, ttl: lease.TTL, deadline: deadline, queued: deadline,
			renewed: renewed, modifyIndex: lease.ModifyIndex, index: len(l.queue)}
		if lease.Ending != fsm.ReasonNone {
			e.ending = lease.Ending.String()
		}
		l.entries[lease.Key] = e
		l.queue = append(l.queue, e)
	}
	heap.Init(&l.queue)
	l.signal()
	return carried
}

// handoverRate bounds how much faster the next leader's clock may run than
// the handing-over leader's, as a fraction: 1/10, the bound the holders'
// margin already assumes between a client and a server
// (docs/adr/0005-client-lease-timing.md).
const handoverRate = 10

// carriedOver is the time a new leader gives a lease that had left on the
// previous leader's clock when it handed over: left plus a tenth, so that
// the new deadline is not earlier than the old one even if the new
// leader's clock runs that much faster (it reads its clock later in real
// time than the old leader read its own). It is not capped at the TTL: a
// lease renewed just before the hand-over would lose the tenth.
func carriedOver(left time.Duration) time.Duration {
	return left + left/handoverRate
}

// Freeze stops every renewal of this leader and returns, for each tracked
// lease whose deadline has not passed, the time it has left: what a
// Handover entry carries to the next leader. Both happen under one lock,
// so no renewal can restart a deadline after it was read and still be
// answered. It returns nil, and freezes nothing, on a lessor that is not
// primary or tracks more than limit leases (their successor then restarts
// them at a full TTL). gen numbers this freeze, for UnfreezeIf.
func (l *Lessor) Freeze(limit int) (leases []fsm.HandedLease, gen uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.primary || len(l.entries) > limit {
		return nil, 0
	}
	l.frozen = true
	l.freezes++
	now := l.clock.Now()
	out := make([]fsm.HandedLease, 0, len(l.entries))
	for _, e := range l.entries {
		left := e.deadline.Sub(now)
		if e.expiring || left <= 0 {
			continue // its Expire may not have committed: a full TTL, later
		}
		out = append(out, fsm.HandedLease{Key: e.key, Token: e.token, ModifyIndex: e.modifyIndex, Left: handedLeft(left)})
	}
	return out, l.freezes
}

// UnfreezeIf lets renewals restart deadlines again, if the freeze
// numbered gen is the last one: the LeaderEstablished that voids a
// Handover says nothing of a later one. The caller first makes sure that
// the hand-over it froze for can no longer be used: a LeaderEstablished
// after it is committed, or this node no longer leads (it commits one
// before it serves again).
func (l *Lessor) UnfreezeIf(gen uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.freezes == gen {
		l.frozen = false
	}
}

// Demote makes the lessor secondary and forgets every deadline.
func (l *Lessor) Demote() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.primary = false
	l.entries = make(map[string]*deadlineEntry)
	l.queue = l.queue[:0]
}

// Grant starts (or restarts) the deadline of a lease that was just
// acquired, or kept by its holder's repeated acquire; index is the
// record's ModifyIndex. A frozen lessor grants too: the entry is in the
// log, and the record's new ModifyIndex keeps a hand-over from applying
// to it.
func (l *Lessor) Grant(key string, token uint64, ttl time.Duration, index uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.primary {
		return
	}
	l.set(key, token, ttl, index, l.clock.Now())
	l.signal()
}

func (l *Lessor) set(key string, token uint64, ttl time.Duration, index uint64, now time.Time) {
	e := l.entries[key]
	if e == nil {
		e = &deadlineEntry{key: key, index: -1}
		l.entries[key] = e
	}
	deadline := now.Add(ttl)
	if e.token == token && !e.expiring && e.deadline.After(deadline) {
		// A late acquire by the holder with a shorter TTL must not cut
		// short a renewal it was already told succeeded.
		deadline = e.deadline
	}
	if e.token != token {
		e.ending = ""
	}
	e.token, e.ttl, e.modifyIndex, e.renewed, e.expiring = token, ttl, index, time.Now(), false
	l.setDeadline(e, deadline)
}

// setDeadline moves e's deadline and keeps the queue's order: an entry
// not queued is pushed; one whose deadline moves earlier than its place
// in the queue is moved up; one whose deadline moves later stays where
// it is (see queued).
func (l *Lessor) setDeadline(e *deadlineEntry, deadline time.Time) {
	e.deadline = deadline
	switch {
	case e.index < 0:
		e.queued = deadline
		heap.Push(&l.queue, e)
	case deadline.Before(e.queued):
		e.queued = deadline
		heap.Fix(&l.queue, e.index)
	}
}

// RenewOutcome is what Renew found.
type RenewOutcome uint8

const (
	Renewed         RenewOutcome = iota // the deadline restarted
	RenewNotPrimary                     // not leading, or frozen for a hand-over
	RenewUnknown                        // no entry under that token: the caller asks the FSM why
	RenewExpired                        // the deadline passed: no renewal saves the lease
	RenewEnding                         // an operator ended the lease: Renew's reason says why
)

// Renew restarts the deadline of key under token, unless the deadline has
// already passed (from that moment the lease is expiring and no renewal can
// save it) or an operator ended the lease (RenewEnding, with End's reason).
func (l *Lessor) Renew(key string, token uint64) (RenewOutcome, string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.primary || l.frozen {
		return RenewNotPrimary, ""
	}
	e := l.entries[key]
	if e == nil || e.token != token {
		return RenewUnknown, ""
	}
	if e.ending != "" {
		return RenewEnding, e.ending
	}
	now := l.clock.Now()
	if e.expiring || !now.Before(e.deadline) {
		// A passed deadline is final; Expired will hand the entry out.
		l.signal()
		return RenewExpired, ""
	}
	e.renewed = time.Now()
	l.setDeadline(e, now.Add(e.ttl))
	return Renewed, ""
}

// End marks the lease of key under token as ended by an operator for
// reason: from now on Renew refuses it, and it frees when its current
// deadline passes, the earliest moment at which its holder is sure to have
// stopped. It returns the time left until then; ok is false when the
// lessor does not track that lease (not primary, or another token).
func (l *Lessor) End(key string, token uint64, reason string) (left time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entries[key]
	if !l.primary || e == nil || e.token != token {
		return 0, false
	}
	if e.ending == "" {
		e.ending = reason
	}
	if e.expiring {
		return 0, true
	}
	return max(e.deadline.Sub(l.clock.Now()), 0), true
}

// Remove forgets the lease of key under token once the FSM freed it. An
// entry under another token (a newer grant) is kept.
func (l *Lessor) Remove(key string, token uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entries[key]
	if e == nil || e.token != token {
		return
	}
	if e.index >= 0 {
		heap.Remove(&l.queue, e.index)
	}
	delete(l.entries, key)
}

// Expiry names a lease whose deadline passed.
type Expiry struct {
	Key   string
	Token uint64
}

// Expired returns up to limit leases whose deadline has passed, in the
// queue's order (deadline order, but for leases renewed since they were
// queued), and marks them expiring. Entries already handed out are not
// returned again; the caller proposes an Expire for each, then Removes it.
func (l *Lessor) Expired(limit int) []Expiry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.primary {
		return nil
	}
	now := l.clock.Now()
	var out []Expiry
	for len(l.queue) > 0 && len(out) < limit {
		e := l.queue[0]
		if now.Before(e.queued) {
			break
		}
		if now.Before(e.deadline) {
			// Renewed since it was queued: back in its place.
			e.queued = e.deadline
			heap.Fix(&l.queue, 0)
			continue
		}
		heap.Pop(&l.queue)
		e.expiring = true
		out = append(out, Expiry{Key: e.key, Token: e.token})
	}
	return out
}

// Next returns how long until the earliest deadline, and false when there is
// none. It may be earlier than the earliest deadline (a lease renewed since
// it was queued): Expired then finds nothing due and puts it in its place.
func (l *Lessor) Next() (time.Duration, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.primary || len(l.queue) == 0 {
		return 0, false
	}
	return l.queue[0].queued.Sub(l.clock.Now()), true
}

// Deadline reports, for display, how long the lease of key under token has
// left and when it was last renewed. ok is false when the lessor does not
// track it (a follower, or a lease already freed).
func (l *Lessor) Deadline(key string, token uint64) (left time.Duration, renewed time.Time, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entries[key]
	if !l.primary || e == nil || e.token != token {
		return 0, time.Time{}, false
	}
	left = e.deadline.Sub(l.clock.Now())
	if left < 0 || e.expiring {
		left = 0
	}
	return left, e.renewed, true
}

// Len is the number of tracked leases.
func (l *Lessor) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

// Changed gets a signal (never blocking) when the earliest deadline may
// have moved earlier: the reader re-arms its timer from Next.
func (l *Lessor) Changed() <-chan struct{} { return l.changed }

func (l *Lessor) signal() {
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// deadlineQueue is a min-heap of entries by deadline.
type deadlineQueue []*deadlineEntry

func (q deadlineQueue) Len() int           { return len(q) }
func (q deadlineQueue) Less(i, j int) bool { return q[i].queued.Before(q[j].queued) }
func (q deadlineQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *deadlineQueue) Push(x any) {
	e := x.(*deadlineEntry)
	e.index = len(*q)
	*q = append(*q, e)
}
func (q *deadlineQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	old[len(old)-1] = nil
	e.index = -1
	*q = old[:len(old)-1]
	return e
}

// StaleEntry is a lease whose holder has not renewed it for a while.
type StaleEntry struct {
	Key          string
	Token        uint64
	TTL          time.Duration
	SinceRenewal time.Duration
}

// Stale lists the leases not renewed (or granted) for longer than
// threshold, or, when threshold is 0, for longer than two thirds of their
// TTL (a client renews every third of it). Promotion counts as a renewal.
func (l *Lessor) Stale(threshold time.Duration) []StaleEntry {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.primary {
		return nil
	}
	now := l.clock.Now()
	var out []StaleEntry
	for _, e := range l.entries {
		if e.expiring || e.ending != "" {
			continue // an ended lease's renewals are refused: not a stuck holder
		}
		since := now.Sub(e.deadline.Add(-e.ttl))
		if since > cmp.Or(threshold, 2*e.ttl/3) {
			out = append(out, StaleEntry{Key: e.key, Token: e.token, TTL: e.ttl, SinceRenewal: since})
		}
	}
	return out
}
