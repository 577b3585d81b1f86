package fsm

import (
	"fmt"
	"maps"
)

// Warm hand-off (docs/adr/0038-warm-hand-off.md): before the balancer
// moves a key from the worker that holds it to another, it may first name
// the new worker in Group.Prepare, keeping the old one as the key's
// target. The new worker prepares (reads, warms caches; it holds no lease
// and no token) and says so with Prepared, which targets the key at it in
// the same entry; the old worker then finishes and hands the key back,
// and the cluster grants it to the new one, as in every move. Neither
// Prepare nor Prepared touches a lease: exclusion and fencing are those of
// every acquisition.

// Prepared is a worker's word that it is ready to own keys that the plan
// had it prepare: each key of Keys still prepared for Worker in Group is
// targeted at Worker and leaves Prepare. Other keys are ignored (the plan
// changed since: the report is stale), and so is the whole report of a
// worker that an operator drained since. A report carries no round: one
// delayed past a move that was called off and planned again for the same
// worker moves the key at once.
type Prepared struct {
	Group  string
	Worker string
	Keys   []string
}

// MaxPrepared bounds the keys of one Prepared in the log. It must never
// shrink: a log written under it must replay. The API's bound is
// wire.MaxPrepareKeys, at most this.
const MaxPrepared = 1024

func (Prepared) Type() Type { return TypePrepared }

func (c Prepared) encode(e *encoder) {
	e.string(c.Group)
	e.string(c.Worker)
	e.strings(c.Keys)
}

func decodePrepared(d *decoder) Prepared {
	c := Prepared{Group: d.string(), Worker: d.string(), Keys: d.strings()}
	if d.err == nil && len(c.Keys) > MaxPrepared {
		d.fail(fmt.Errorf("prepared of %d keys (at most %d)", len(c.Keys), MaxPrepared))
	}
	return c
}

// applyPrepared runs under m.mu.
func (m *Machine) applyPrepared(index uint64, c Prepared) Result {
	g := m.groups[c.Group]
	if g == nil {
		return Result{Code: NotFound}
	}
	if m.drained[c.Worker] {
		return Result{Code: Done} // it gets no keys: the balancer plans them elsewhere
	}
	var ready []string
	for _, k := range c.Keys {
		if w, ok := g.Prepare[k]; ok && w == c.Worker && c.Worker != "" {
			ready = append(ready, k)
		}
	}
	if len(ready) == 0 {
		return Result{Code: Done}
	}
	return m.changeGroup(index, c.Group, func(cur, next *Group) {
		next.Assignment = maps.Clone(cur.Assignment)
		if next.Assignment == nil {
			next.Assignment = make(map[string]string, len(ready))
		}
		next.Prepare = maps.Clone(cur.Prepare)
		for _, k := range ready {
			next.Assignment[k] = c.Worker
			delete(next.Prepare, k)
		}
		if len(next.Prepare) == 0 {
			next.Prepare = nil
		}
		next.AssignIndex = index
		m.emitAssigned(c.Group, cur.Assignment, next.Assignment)
	})
}

// keepPrepared returns the entries of p whose key is in keys (sorted) and
// whose worker is not the key's target in assignment, or nil when none is
// left.
func keepPrepared(p map[string]string, keys []string, assignment map[string]string) map[string]string {
	out := keepAssigned(p, keys)
	for k, w := range out {
		if assignment[k] == w {
			delete(out, k)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// encodePrepares writes the snapshot's version 9 section: the count of
// groups with keys being prepared, then for each (sorted by name) its
// name and Prepare.
func encodePrepares(e *encoder, st state) {
	var with []*Group
	for _, g := range st.groups {
		if len(g.Prepare) > 0 {
			with = append(with, g)
		}
	}
	e.uvarint(uint64(len(with)))
	for _, g := range with {
		e.string(g.Name)
		e.stringMap(g.Prepare)
	}
}

// decodePrepares reads what encodePrepares wrote into the groups that
// decodePlacement read.
func decodePrepares(d *decoder, st *state) {
	byName := make(map[string]*Group, len(st.groups))
	for _, g := range st.groups {
		byName[g.Name] = g
	}
	d.sortedEntries("group prepares", func(name string) {
		p := d.stringMap()
		if d.err == nil && len(p) == 0 {
			d.fail(fmt.Errorf("prepares of group %q: an empty entry", name))
			return
		}
		g := byName[name]
		if g == nil {
			d.fail(fmt.Errorf("prepares of unknown group %q", name))
			return
		}
		if d.err == nil && !maps.Equal(p, keepPrepared(p, g.Keys, g.Assignment)) {
			d.fail(fmt.Errorf("prepares of group %q: a key not in the group, or prepared for its target", name))
			return
		}
		g.Prepare = p
	})
}
