package fsm

import (
	"fmt"
	"time"
)

// maxHandover bounds the leases of one Handover (a stopping leader with
// more hands over none: its successor restarts them at a full TTL).
const maxHandover = 1 << 17

// Handover is written by a leader that is about to hand leadership over:
// the time each held lease had left on its clock once it had stopped
// restarting deadlines. The next leader may start those leases with what
// they had left instead of a full TTL, but only while nothing else has
// led since: the Handover is forgotten when a LeaderEstablished is applied
// after it, and it is not kept in snapshots
// (docs/adr/0018-graceful-leader-stop.md).
type Handover struct {
	// Term is the handing-over leader's term; a Handover of an older term
	// than the last LeaderEstablished is ignored.
	Term   uint64
	Leases []HandedLease
}

// HandedLease is one lease of a Handover: its key and token, the
// ModifyIndex of the record whose deadline the leader had (so that a
// lease changed by a later entry, such as its holder's repeated acquire,
// is not cut short), and the time it had left.
type HandedLease struct {
	Key         string
	Token       uint64
	ModifyIndex uint64
	Left        time.Duration
}

func (Handover) Type() Type { return TypeHandover }

func (c Handover) encode(e *encoder) {
	e.uvarint(c.Term)
	e.uvarint(uint64(len(c.Leases)))
	for _, l := range c.Leases {
		e.string(l.Key)
		e.uvarint(l.Token)
		e.uvarint(l.ModifyIndex)
		e.varint(int64(l.Left))
	}
}

func decodeHandover(d *decoder) Handover {
	c := Handover{Term: d.uvarint()}
	n := d.uvarint()
	// Each lease takes at least 4 bytes: a count beyond that is corrupt.
	if d.err == nil && (n > maxHandover || n > uint64(len(d.buf))/4) {
		d.fail(fmt.Errorf("handover of %d leases", n))
	}
	if d.err != nil {
		return c
	}
	c.Leases = make([]HandedLease, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		l := HandedLease{Key: d.string(), Token: d.uvarint(), ModifyIndex: d.uvarint(), Left: time.Duration(d.varint())}
		if l.Left < 0 {
			d.fail(fmt.Errorf("lease %q: negative time left %d", l.Key, l.Left))
		}
		c.Leases = append(c.Leases, l)
	}
	return c
}

// applyHandover runs under m.mu.
func (m *Machine) applyHandover(c Handover) Result {
	if c.Term < m.establishedTerm {
		return Result{Code: Refused}
	}
	m.handover = make(map[string]HandedLease, len(c.Leases))
	for _, l := range c.Leases {
		m.handover[l.Key] = l
	}
	return Result{Code: Done}
}

// PendingHandover returns the leases of the last Handover applied, by
// key, while no leader has established itself after it; nil otherwise. A
// new leader reads it after its barrier and before its own
// LeaderEstablished, which forgets it, and uses a lease's time only for
// the record that the lease names (HandedLease.Names). The map is shared:
// callers must not modify it.
func (m *Machine) PendingHandover() map[string]HandedLease {
	return rlocked(m, func() map[string]HandedLease { return m.handover })
}

// Names reports whether cur is the very record whose deadline h carries:
// held, under the same token, and not changed since (a holder's repeated
// acquire, for one, restarts the deadline and changes ModifyIndex).
func (h HandedLease) Names(cur *Lease) bool {
	return cur != nil && cur.Held && cur.Key == h.Key && cur.Token == h.Token && cur.ModifyIndex == h.ModifyIndex
}
