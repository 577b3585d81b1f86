package fsm

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// EventType says what an applied change did. The names (String) are part
// of the HTTP API; the numbers are not stored anywhere.
type EventType uint8

// Event types. Renewals are not events: they are not in the log.
const (
	// EventAcquired: a free key was granted (a new token).
	EventAcquired EventType = iota + 1
	// EventReleased: the holder released the key.
	EventReleased
	// EventExpired: the leader expired the key.
	EventExpired
	// EventRevoked: an operator revoked the key.
	EventRevoked
	// EventHandedOff: the key was granted in the same log entry that
	// released, expired or revoked it (the freeing event comes first).
	EventHandedOff
	// EventGroupChanged: a group was created, changed or deleted (Reason
	// says which).
	EventGroupChanged
	// EventAssigned: the balancer's target owner of one key of a group
	// changed (Worker is the new target, "" for none).
	EventAssigned
	// EventControlChanged: an operator replaced the controls of a key.
	EventControlChanged
	// EventDrained: an operator drained a worker, or undrained it (Reason
	// "drained" or "undrained").
	EventDrained
	// EventMetadataChanged: the holder re-acquired its lease with other
	// metadata (same token).
	EventMetadataChanged
	// EventForgotten: the leader deleted the record of a key that had been
	// free for longer than its retention (Holder and Token: the last
	// lease).
	EventForgotten
	// EventStuck: the balancer marked a worker of a group stuck (Reason
	// "stuck") or let it back (Reason "unstuck").
	EventStuck
	// EventEnding: an operator ended a lease without force (Reason
	// revoked, disabled or prohibited): its holder's renewals are refused,
	// and the key frees (EventRevoked) when the holder's deadline passes.
	EventEnding
)

var eventNames = [...]string{"", "acquired", "released", "expired", "revoked", "handed_off",
	"group_changed", "assigned", "control_changed", "drained", "metadata_changed", "forgotten", "stuck", "ending"}

func (t EventType) String() string {
	if int(t) < len(eventNames) && t != 0 {
		return eventNames[t]
	}
	return fmt.Sprintf("event(%d)", t)
}

// ParseEventType returns the event type called name ("acquired", …).
func ParseEventType(name string) (EventType, error) {
	for i, n := range eventNames {
		if i > 0 && n == name {
			return EventType(i), nil
		}
	}
	return 0, fmt.Errorf("unknown event type %q, want one of %s", name, strings.Join(eventNames[1:], ", "))
}

// Reasons of group_changed and drained events.
const (
	GroupCreated    = "created"
	GroupUpdated    = "updated"
	GroupDeleted    = "deleted"
	GroupKeysSet    = "keys"
	GroupMaxSet     = "max_per_worker"
	GroupBalanceSet = "balance"
	WorkerDrained   = "drained"
	WorkerResumed   = "undrained"
	WorkerStuck     = "stuck"
	WorkerUnstuck   = "unstuck"
	defaultHistory  = 10000
)

// Event is one applied change. Every node produces the same events for the
// same log entry: they are a function of the entry and the state before
// it. Like Lease, an Event is never modified once recorded.
type Event struct {
	// Index and Term are those of the Raft entry that made the change.
	Index, Term uint64
	// At is when the leader appended that entry, by its wall clock, in
	// Unix nanoseconds (raft.Log.AppendedAt, stored in the entry, so every
	// server gives the same); 0 when the entry carries no time.
	At   int64
	Type EventType
	// Key, Holder and Token: the lease (for lease events, the holder and
	// token of the lease after the change, or of the freed lease); Key
	// also for assigned and control_changed.
	Key    string
	Holder string
	Token  uint64
	// Group names the group of group_changed and assigned; Worker the
	// target of assigned and the worker of drained.
	Group  string
	Worker string
	// By is who did it, for operator actions while ACLs are on: the
	// accessor id of the request's token, or "anonymous".
	By string
	// Reason: group_changed: created, updated, deleted, keys,
	// max_per_worker; drained: drained or undrained.
	Reason string
	// Disabled and Prohibited are the key's new controls
	// (control_changed).
	Disabled   bool
	Prohibited []string
}

// EventFilter selects events. Zero fields match everything.
type EventFilter struct {
	// Prefix matches events whose Key, Group or Worker starts with it.
	Prefix string
	// Types, when not empty, are the event types to return.
	Types []EventType
}

func (f EventFilter) match(e *Event) bool {
	if len(f.Types) > 0 && !slices.Contains(f.Types, e.Type) {
		return false
	}
	if f.Prefix == "" {
		return true
	}
	for _, name := range [...]string{e.Key, e.Group, e.Worker} {
		if name != "" && strings.HasPrefix(name, f.Prefix) {
			return true
		}
	}
	return false
}

// ErrCompacted is matched (errors.Is) by a *CompactedError.
var ErrCompacted = errors.New("event history compacted")

// CompactedError says that the events asked for are no longer in the
// history: it holds every event of every entry after Oldest only.
type CompactedError struct {
	After, Oldest uint64
}

func (e *CompactedError) Error() string {
	return fmt.Sprintf("events after index %d are gone: the history holds the events after index %d", e.After, e.Oldest)
}

// Is makes errors.Is(err, ErrCompacted) true.
func (e *CompactedError) Is(target error) bool { return target == ErrCompacted }

// Option configures a Machine.
type Option func(*Machine)

// WithEventHistory sets how many events the Machine keeps (at least 1;
// smaller values keep the default, 10,000).
func WithEventHistory(n int) Option {
	return func(m *Machine) {
		if n > 0 {
			m.history.capacity = n
		}
	}
}

// history is the bounded ring of recent events. It holds every event of
// every entry with an index above base, in index order.
type history struct {
	capacity int
	ring     []Event // circular, len(ring) grows up to capacity
	start, n int
	base     uint64
}

func (h *history) at(i int) *Event { return &h.ring[(h.start+i)%len(h.ring)] }

// push adds the events of one entry, then drops whole entries from the
// front until at most capacity events are left.
func (h *history) push(events []Event) {
	for _, e := range events {
		if h.n == len(h.ring) && len(h.ring) < h.capacity {
			h.grow()
		}
		if h.n == len(h.ring) { // full: overwrite the oldest
			h.base = max(h.base, h.ring[h.start].Index)
			h.start = (h.start + 1) % len(h.ring)
			h.n--
		}
		*h.at(h.n) = e
		h.n++
	}
	// The oldest entry may now be partly overwritten: drop the rest of it.
	for h.n > 0 && h.at(0).Index <= h.base {
		h.start = (h.start + 1) % len(h.ring)
		h.n--
	}
}

// grow makes room for more events (up to capacity), oldest first.
func (h *history) grow() {
	size := min(h.capacity, max(2*len(h.ring), 64))
	ring := make([]Event, size)
	for i := 0; i < h.n; i++ {
		ring[i] = *h.at(i)
	}
	h.ring, h.start = ring, 0
}

// reset empties the history; it then holds every event after base.
func (h *history) reset(base uint64) {
	h.ring, h.start, h.n, h.base = nil, 0, 0, base
}

// freeEvents is the event of each reason a key is freed for.
var freeEvents = map[Reason]EventType{ReasonReleased: EventReleased, ReasonExpired: EventExpired,
	ReasonRevoked: EventRevoked, ReasonDisabled: EventRevoked, ReasonProhibited: EventRevoked}

// emit records e as an event of the entry being applied (m.mu held).
// Index, Term, At and By are filled in from the entry. A grant (acquired) of a
// key that the same entry freed becomes handed_off.
func (m *Machine) emit(e Event) {
	e.Index, e.Term, e.At, e.By = m.appliedIndex, m.appliedTerm, m.appliedAt, m.by
	switch e.Type {
	case EventReleased, EventExpired, EventRevoked:
		if m.freed == nil {
			m.freed = make(map[string]bool)
		}
		m.freed[e.Key] = true
	case EventAcquired:
		if m.freed[e.Key] {
			e.Type = EventHandedOff
		}
	}
	m.pending = append(m.pending, e)
}

// emitAssigned records one assigned event per key whose target differs
// between before and after, in key order.
func (m *Machine) emitAssigned(group string, before, after map[string]string) {
	keys := make([]string, 0, len(before)+len(after))
	for k, w := range before {
		if after[k] != w {
			keys = append(keys, k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		m.emit(Event{Type: EventAssigned, Group: group, Key: k, Worker: after[k]})
	}
}

// Events returns, in index order, the events after index after that match
// f: at most limit of them (limit <= 0: no limit), except that the events
// of one entry are never split, and next, the index to pass as after to
// continue: the last returned event's index when the limit cut the
// answer, the last applied index otherwise (or after, if that is higher:
// next never goes back). It returns a *CompactedError when the history no
// longer holds every event after after. It runs concurrently with Apply.
func (m *Machine) Events(after uint64, f EventFilter, limit int) ([]Event, uint64, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	h := &m.history
	if after < h.base {
		return nil, 0, &CompactedError{After: after, Oldest: h.base}
	}
	// The first event after after (events are in index order).
	lo := sort.Search(h.n, func(i int) bool { return h.at(i).Index > after })
	var out []Event
	for i := lo; i < h.n; i++ {
		e := h.at(i)
		if limit > 0 && len(out) >= limit && e.Index != out[len(out)-1].Index {
			return out, out[len(out)-1].Index, nil
		}
		if f.match(e) {
			out = append(out, *e)
		}
	}
	return out, max(after, m.appliedIndex), nil
}

// EventBase is the index after which the history holds every event: the
// oldest index a reader may pass to Events.
func (m *Machine) EventBase() uint64 { return rlocked(m, func() uint64 { return m.history.base }) }

// pick is yes if cond holds, no otherwise.
func pick(cond bool, yes, no string) string {
	if cond {
		return yes
	}
	return no
}
