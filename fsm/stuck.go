package fsm

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// GroupDefine creates a group or replaces its keys and settings, like
// GroupPut, and also sets the settings that GroupPut predates. The
// assignment of keys that stay and the group's stuck marks are kept.
type GroupDefine struct {
	Name         string
	Keys         []string
	MaxPerWorker int
	// StuckGrace is how long a key may stay free while targeted at a
	// worker before the balancer marks that worker stuck; 0 means the
	// balancer's default (twice the largest TTL of the group's leases).
	StuckGrace time.Duration
	// MinWorkers is how many live workers the group should have; fewer is
	// reported as a problem by the placement health report. 0: no minimum.
	MinWorkers int
}

// MarkStuck replaces the set of workers of a group that the leader's
// balancer found stuck: alive on gossip, but not holding a key targeted at
// them within the group's grace. Only the leader's balancer proposes it.
type MarkStuck struct {
	Group   string
	Workers []string
}

func (GroupDefine) Type() Type { return TypeGroupDefine }
func (MarkStuck) Type() Type   { return TypeMarkStuck }

// encode writes GroupPut's payload, then the settings GroupPut predates.
func (c GroupDefine) encode(e *encoder) {
	GroupPut{Name: c.Name, Keys: c.Keys, MaxPerWorker: c.MaxPerWorker}.encode(e)
	e.varint(int64(c.StuckGrace))
	e.varint(int64(c.MinWorkers))
}

func (c MarkStuck) encode(e *encoder) {
	e.string(c.Group)
	e.strings(c.Workers)
}

// decodeGroupDefine reads what GroupDefine.encode wrote, alone or inside
// a GroupPutCAS.
func decodeGroupDefine(d *decoder) GroupDefine {
	return GroupDefine{Name: d.string(), Keys: d.strings(), MaxPerWorker: int(d.varint()),
		StuckGrace: time.Duration(d.varint()), MinWorkers: int(d.varint())}
}

// defineGroup stores the group that a GroupPut or a GroupDefine describes.
func (m *Machine) defineGroup(index uint64, c GroupDefine) {
	next := &Group{Name: c.Name, Keys: sortedSet(c.Keys), MaxPerWorker: c.MaxPerWorker,
		StuckGrace: c.StuckGrace, MinWorkers: c.MinWorkers, CreateIndex: index, ModifyIndex: index}
	cur := m.groups[c.Name]
	if cur != nil {
		next.CreateIndex, next.AssignIndex = cur.CreateIndex, cur.AssignIndex
		next.Assignment = keepAssigned(cur.Assignment, next.Keys)
		next.Prepare = keepAssigned(cur.Prepare, next.Keys)
		next.Stuck = cur.Stuck
		next.Balance = cur.Balance // a setting of its own (GroupBalance)
	}
	m.emit(Event{Type: EventGroupChanged, Group: c.Name, Reason: pick(cur != nil, GroupUpdated, GroupCreated)})
	m.storeGroup(next)
}

// setStuck is the one place where the stuck set of a group changes: a
// producer of change events hooks in here to emit "stuck" and "unstuck".
// workers is sorted and unique; an empty set is stored as nil. It runs
// inside changeGroup, which stores next.
func (m *Machine) setStuck(cur, next *Group, workers []string) {
	for _, w := range workers {
		if !cur.IsStuck(w) {
			m.emit(Event{Type: EventStuck, Group: cur.Name, Worker: w, Reason: WorkerStuck})
		}
	}
	for _, w := range cur.Stuck {
		if i := sort.SearchStrings(workers, w); i == len(workers) || workers[i] != w {
			m.emit(Event{Type: EventStuck, Group: cur.Name, Worker: w, Reason: WorkerUnstuck})
		}
	}
	next.Stuck = nil
	if len(workers) > 0 {
		next.Stuck = workers
	}
}

// IsStuck reports whether the balancer marked worker stuck in g.
func (g *Group) IsStuck(worker string) bool { return slices.Contains(g.Stuck, worker) }

// encodeGroupSettings writes the snapshot's version 4 section of group
// settings and stuck marks: the count of groups that have any, then for
// each (sorted by name, as st.groups is after encodePlacement) its name,
// stuck grace, min workers and stuck workers.
func encodeGroupSettings(e *encoder, st state) {
	var with []*Group
	for _, g := range st.groups {
		if g.StuckGrace != 0 || g.MinWorkers != 0 || len(g.Stuck) > 0 {
			with = append(with, g)
		}
	}
	e.uvarint(uint64(len(with)))
	for _, g := range with {
		e.string(g.Name)
		e.varint(int64(g.StuckGrace))
		e.varint(int64(g.MinWorkers))
		e.strings(g.Stuck)
	}
}

// decodeGroupSettings reads what encodeGroupSettings wrote into the groups
// that decodePlacement read.
func decodeGroupSettings(d *decoder, st *state) {
	n := d.count("group settings")
	byName := make(map[string]int, len(st.groups))
	for i, g := range st.groups {
		byName[g.Name] = i
	}
	last := -1
	for i := uint64(0); i < n && d.err == nil; i++ {
		name := d.string()
		grace, minWorkers, stuck := time.Duration(d.varint()), int(d.varint()), d.strings()
		if d.err != nil {
			break
		}
		j, ok := byName[name]
		switch {
		case !ok:
			d.fail(fmt.Errorf("settings of group %q, which the snapshot lacks", name))
		case j <= last:
			d.fail(fmt.Errorf("settings of group %q out of order", name))
		case !strictlySorted(stuck):
			d.fail(fmt.Errorf("stuck workers of group %q out of order", name))
		default:
			last = j
			g := *st.groups[j]
			g.StuckGrace, g.MinWorkers = grace, minWorkers
			if len(stuck) > 0 {
				g.Stuck = stuck
			}
			st.groups[j] = &g
		}
	}
}
