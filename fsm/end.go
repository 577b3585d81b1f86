package fsm

import (
	"fmt"
	"sort"
)

// End ends leases on an operator's behalf (revoke). With Key set it ends
// the lease of Key, and with Holder also set only if Holder holds it; with
// Key empty it ends every lease that Holder holds.
//
// Without Force an ended lease becomes ending (Lease.Ending is
// ReasonRevoked): it stays held, so nobody else can take it, but is never
// kept or renewed again, and the leader frees it when its deadline passes.
// Ending an ending lease changes nothing. With Force the lease is freed at
// once (ReasonRevoked): exclusion then rests on fencing alone.
//
// Result: for a key, Ending or Freed, NotHeld (free, or held by another
// holder than Holder) or NotFound (never seen); for a holder, Done. Ended
// lists the leases the command ended.
type End struct {
	Key    string
	Holder string
	Force  bool
}

func (End) Type() Type { return TypeEnd }

func (c End) encode(e *encoder) {
	e.string(c.Key)
	e.string(c.Holder)
	e.bool(c.Force)
}

// end applies an End under m.mu.
func (m *Machine) end(index uint64, c End) Result {
	if c.Key != "" {
		cur := m.leases[c.Key]
		switch {
		case cur == nil:
			return Result{Code: NotFound}
		case !cur.Held, c.Holder != "" && cur.Holder != c.Holder:
			return Result{Code: NotHeld, Lease: cur}
		}
		l := m.endLease(index, cur, ReasonRevoked, c.Force)
		code := Ending
		if !l.Held {
			code = Freed
		}
		return Result{Code: code, Lease: l, Ended: []*Lease{l}}
	}
	if c.Holder == "" {
		return Result{Code: NotFound}
	}
	var keys []string
	for k, l := range m.leases {
		if l.Held && l.Holder == c.Holder {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys) // the same order on every replica
	out := Result{Code: Done}
	for _, k := range keys {
		out.Ended = append(out.Ended, m.endLease(index, m.leases[k], ReasonRevoked, c.Force))
	}
	return out
}

// endLease ends cur, a held lease, for why: frees it at once when force,
// and otherwise marks it ending unless it already is. It returns the
// lease's record after.
func (m *Machine) endLease(index uint64, cur *Lease, why Reason, force bool) *Lease {
	if force {
		if cur.Ending != ReasonNone {
			why = cur.Ending
		}
		return m.free(index, cur, why).Lease
	}
	if cur.Ending != ReasonNone {
		return cur
	}
	next := *cur
	next.Ending = why
	next.ModifyIndex = index
	m.store(&next)
	m.emit(Event{Type: EventEnding, Key: next.Key, Holder: next.Holder, Token: next.Token, Reason: why.String()})
	return &next
}

// endByControl ends the held lease of key when the key's current controls
// refuse its holder: disabled (ReasonDisabled) or the holder prohibited
// (ReasonProhibited). Every command that changes a key's controls calls it
// after the change, in the same entry, so that a disabled key or a
// prohibited holder never keeps renewing. It returns the ended lease's
// record, or nil when nothing was ended.
func (m *Machine) endByControl(index uint64, key string, force bool) *Lease {
	cur := m.leases[key]
	if cur == nil || !cur.Held {
		return nil
	}
	ctl := m.controls[key]
	var why Reason
	switch {
	case ctl.Disabled:
		why = ReasonDisabled
	case ctl.Prohibits(cur.Holder):
		why = ReasonProhibited
	default:
		return nil
	}
	if !force && cur.Ending != ReasonNone {
		return nil // already ending: its deadline stands
	}
	return m.endLease(index, cur, why, force)
}

// encodeEnding writes the snapshot section of version 4: the ending
// leases, as key and reason, in key order (leases is sorted by key).
func encodeEnding(e *encoder, leases []*Lease) {
	encodeLeasesWith(e, leases, func(l *Lease) bool { return l.Ending != ReasonNone }, func(l *Lease) { e.byte(byte(l.Ending)) })
}

// decodeEnding reads what encodeEnding wrote and marks those leases of
// st (read before it, sorted by key) as ending. The leases are replaced,
// not modified.
func decodeEnding(d *decoder, st *state) {
	n := d.count("ending leases")
	var prev string
	for i := uint64(0); i < n && d.err == nil; i++ {
		key, why := d.string(), Reason(d.byte())
		if d.err != nil {
			return
		}
		if i > 0 && key <= prev {
			d.fail(fmt.Errorf("ending lease %q out of order", key))
			return
		}
		prev = key
		if why < ReasonRevoked || why > maxReason {
			d.fail(fmt.Errorf("ending lease %q: reason %d", key, why))
			return
		}
		j := sort.Search(len(st.leases), func(j int) bool { return st.leases[j].Key >= key })
		if j == len(st.leases) || st.leases[j].Key != key || !st.leases[j].Held {
			d.fail(fmt.Errorf("ending lease %q is not a held lease", key))
			return
		}
		l := *st.leases[j]
		l.Ending = why
		st.leases[j] = &l
	}
}
