package fsm

import (
	"slices"
	"sort"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

// Group is a named set of keys that the leader's balancer spreads over the
// live workers of the group. Like Lease, a stored Group is never modified:
// every change stores a new value.
type Group struct {
	Name string
	// Keys are sorted and unique.
	Keys []string
	// MaxPerWorker bounds the keys one worker is given; 0 means no bound
	// beyond an even spread.
	MaxPerWorker int
	// StuckGrace and MinWorkers are the settings of GroupDefine (zero for
	// a group that GroupPut made).
	StuckGrace time.Duration
	MinWorkers int
	// Stuck are the workers the balancer marked stuck (sorted, unique):
	// they get no new keys until they hold what they have. See MarkStuck.
	Stuck []string
	// Balance is how the balancer places the keys; nil: by count.
	Balance *Balance
	// Assignment is the balancer's target owner (a worker id) of each key
	// that has one. It is intent only: exclusivity comes from leases.
	Assignment map[string]string
	// Prepare names, for a key that the balancer is about to move from
	// the worker holding it to another, the other worker: it prepares the
	// key while the key's target stays its holder, until Prepared or the
	// balancer retargets it (warm.go). Never a key's target; intent only.
	Prepare map[string]string
	// CreateIndex and ModifyIndex are the Raft indexes that created and
	// last changed the group (definition or assignment); AssignIndex the
	// one that last changed the assignment.
	CreateIndex, ModifyIndex, AssignIndex uint64
}

// KeyControl holds an operator's controls of one key.
type KeyControl struct {
	// Disabled keys cannot be acquired, and the balancer gives them no
	// owner.
	Disabled bool
	// Prohibited holders cannot acquire the key (sorted, unique).
	Prohibited []string
}

// Prohibits reports whether holder may not acquire the key: holder is
// prohibited, or holder is "<id>#<suffix>" (a worker's holder) and <id> is
// prohibited.
func (c KeyControl) Prohibits(holder string) bool {
	if c.prohibits(holder) {
		return true
	}
	if w := wire.WorkerOf(holder); w != holder {
		return c.prohibits(w)
	}
	return false
}

func (c KeyControl) prohibits(holder string) bool {
	_, found := slices.BinarySearch(c.Prohibited, holder)
	return found
}

func (c KeyControl) empty() bool { return !c.Disabled && len(c.Prohibited) == 0 }

// GroupPut creates a group or replaces its keys and settings; the
// assignment of keys that stay in the group is kept.
type GroupPut struct {
	Name         string
	Keys         []string
	MaxPerWorker int
}

// GroupDelete removes a group (its leases are not touched).
type GroupDelete struct {
	Name string
}

// GroupKeys adds and removes keys of a group.
type GroupKeys struct {
	Name   string
	Add    []string
	Remove []string
}

// GroupSetKeys sets the keys of a group to Keys, adding and removing in
// one entry, whatever they were: the keys that stay keep their targets. A
// group whose keys are Keys already is left as it is (its ModifyIndex
// too), so that a caller may repeat it at will.
type GroupSetKeys struct {
	Name string
	Keys []string
}

// SetKeyControl replaces the controls of a key. When the new controls
// refuse the key's holder (the key disabled, or the holder prohibited),
// its lease ends in the same entry: it becomes ending (Lease.Ending is
// ReasonDisabled or ReasonProhibited) and frees when the leader's deadline
// passes, or, with Force (encoded as type TypeKeyControlForce), it is
// freed at once. Result.Ended lists the lease it ended.
//
// It is encoded as type TypeKeyControlEnd, or TypeKeyControlForce with
// Force. Entries of type TypeKeyControl were written before controls ended
// leases: they decode with KeepsHolder set and apply as they did then,
// leaving a held lease alone, so that every replica replays them the same.
type SetKeyControl struct {
	Key         string
	Control     KeyControl
	Force       bool
	KeepsHolder bool
}

// WorkerDrain marks a worker as drained by an operator (or not): the
// balancer gives a drained worker no keys.
type WorkerDrain struct {
	Worker   string
	Draining bool
}

// GroupMax sets the per-worker maximum of a group, leaving its keys as
// they are.
type GroupMax struct {
	Name         string
	MaxPerWorker int
}

// Assign replaces the target assignment of a group, and the keys other
// workers prepare (Group.Prepare; entries for a key's own target are
// dropped). Only the leader's balancer proposes it. With Base (not 0), it
// changes nothing (CASFailed) unless the group's AssignIndex is still
// Base: a Prepared applied since the balancer read the group is not
// undone by a plan made without it. An Assign without Prepare and Base is
// written as payload version 1, as before warm hand-offs.
type Assign struct {
	Group      string
	Assignment map[string]string
	Prepare    map[string]string
	Base       uint64
}

func (GroupPut) Type() Type     { return TypeGroupPut }
func (GroupDelete) Type() Type  { return TypeGroupDelete }
func (GroupKeys) Type() Type    { return TypeGroupKeys }
func (GroupSetKeys) Type() Type { return TypeGroupSetKeys }
func (c SetKeyControl) Type() Type {
	switch {
	case c.Force:
		return TypeKeyControlForce
	case c.KeepsHolder:
		return TypeKeyControl
	}
	return TypeKeyControlEnd
}
func (WorkerDrain) Type() Type { return TypeWorkerDrain }
func (Assign) Type() Type      { return TypeAssign }
func (GroupMax) Type() Type    { return TypeGroupMax }

func (c GroupPut) encode(e *encoder) {
	e.string(c.Name)
	e.strings(c.Keys)
	e.varint(int64(c.MaxPerWorker))
}

func (c GroupDelete) encode(e *encoder) { e.string(c.Name) }

func (c GroupKeys) encode(e *encoder) {
	e.string(c.Name)
	e.strings(c.Add)
	e.strings(c.Remove)
}

func (c GroupSetKeys) encode(e *encoder) {
	e.string(c.Name)
	e.strings(c.Keys)
}

func (c SetKeyControl) encode(e *encoder) {
	e.string(c.Key)
	e.bool(c.Control.Disabled)
	e.strings(c.Control.Prohibited)
}

func (c WorkerDrain) encode(e *encoder) {
	e.string(c.Worker)
	e.bool(c.Draining)
}

func (c GroupMax) encode(e *encoder) {
	e.string(c.Name)
	e.varint(int64(c.MaxPerWorker))
}

func (c Assign) encode(e *encoder) {
	e.string(c.Group)
	e.stringMap(c.Assignment)
	if payloadVersion(c) == version2 {
		e.stringMap(c.Prepare)
		e.uvarint(c.Base)
	}
}

// applyGroup runs a group, control or worker command under m.mu.
func (m *Machine) applyGroup(index uint64, cmd Command) Result {
	switch c := cmd.(type) {
	case GroupPut:
		// The settings GroupPut predates are zero, as they were when it
		// was the only way to define a group.
		m.defineGroup(index, GroupDefine{Name: c.Name, Keys: c.Keys, MaxPerWorker: c.MaxPerWorker})
	case GroupDelete:
		if m.groups[c.Name] == nil {
			return Result{Code: NotFound}
		}
		delete(m.groups, c.Name)
		m.groupIndex = index
		m.emit(Event{Type: EventGroupChanged, Group: c.Name, Reason: GroupDeleted})
	case GroupKeys:
		return m.changeGroup(index, c.Name, func(cur, next *Group) {
			remove := make(map[string]bool, len(c.Remove))
			for _, k := range c.Remove {
				remove[k] = true
			}
			next.Keys = sortedSet(slices.DeleteFunc(slices.Concat(cur.Keys, c.Add), func(k string) bool { return remove[k] }))
			next.Assignment = keepAssigned(cur.Assignment, next.Keys)
			next.Prepare = keepAssigned(cur.Prepare, next.Keys)
			m.emit(Event{Type: EventGroupChanged, Group: c.Name, Reason: GroupKeysSet})
		})
	case GroupSetKeys:
		keys := sortedSet(c.Keys)
		if g := m.groups[c.Name]; g != nil && slices.Equal(g.Keys, keys) {
			break // nothing to change
		}
		return m.changeGroup(index, c.Name, func(cur, next *Group) {
			next.Keys = keys
			next.Assignment = keepAssigned(cur.Assignment, next.Keys)
			next.Prepare = keepAssigned(cur.Prepare, next.Keys)
			m.emit(Event{Type: EventGroupChanged, Group: c.Name, Reason: GroupKeysSet})
		})
	case SetKeyControl:
		m.setControl(index, c.Key, KeyControl{Disabled: c.Control.Disabled, Prohibited: sortedSet(c.Control.Prohibited)})
		if c.KeepsHolder {
			break // written before controls ended leases: apply as then
		}
		if l := m.endByControl(index, c.Key, c.Force); l != nil {
			return Result{Code: Done, Ended: []*Lease{l}}
		}
	case WorkerDrain:
		if c.Draining {
			m.drained[c.Worker] = true
		} else {
			delete(m.drained, c.Worker)
		}
		m.groupIndex = index
		m.emit(Event{Type: EventDrained, Worker: c.Worker, Reason: pick(c.Draining, WorkerDrained, WorkerResumed)})
	case GroupMax:
		return m.changeGroup(index, c.Name, func(_, next *Group) {
			next.MaxPerWorker = c.MaxPerWorker
			m.emit(Event{Type: EventGroupChanged, Group: c.Name, Reason: GroupMaxSet})
		})
	case Assign:
		if g := m.groups[c.Group]; g != nil && c.Base != 0 && g.AssignIndex != c.Base {
			return Result{Code: CASFailed}
		}
		return m.changeGroup(index, c.Group, func(cur, next *Group) {
			next.Assignment = keepAssigned(c.Assignment, cur.Keys)
			next.Prepare = keepPrepared(c.Prepare, cur.Keys, next.Assignment)
			next.AssignIndex = index
			m.emitAssigned(c.Group, cur.Assignment, next.Assignment)
		})
	}
	return Result{Code: Done}
}

// changeGroup stores next, a copy of the group called name that change
// edits (and may emit events about), with ModifyIndex index; NotFound when
// there is no such group. m.mu is held.
func (m *Machine) changeGroup(index uint64, name string, change func(cur, next *Group)) Result {
	cur := m.groups[name]
	if cur == nil {
		return Result{Code: NotFound}
	}
	next := *cur
	change(cur, &next)
	next.ModifyIndex = index
	m.storeGroup(&next)
	return Result{Code: Done}
}

func (m *Machine) storeGroup(g *Group) {
	m.groups[g.Name] = g
	m.groupIndex = g.ModifyIndex
}

// keepAssigned returns the entries of a whose key is in keys (sorted), or
// nil when none is left: a group restored from a snapshot has no map for
// an empty assignment, and one that applied the log must not differ.
func keepAssigned(a map[string]string, keys []string) map[string]string {
	var out map[string]string
	for k, w := range a {
		if i := sort.SearchStrings(keys, k); i < len(keys) && keys[i] == k && w != "" {
			if out == nil {
				out = make(map[string]string, len(a))
			}
			out[k] = w
		}
	}
	return out
}

// strictlySorted reports whether s is sorted and has no duplicates.
func strictlySorted(s []string) bool {
	for i := 1; i < len(s); i++ {
		if s[i-1] >= s[i] {
			return false
		}
	}
	return true
}

// sortedSet returns the distinct values of s, sorted, as a new slice.
func sortedSet(s []string) []string {
	out := append([]string(nil), s...)
	slices.Sort(out)
	return slices.Compact(out)
}

// Group returns the group called name, or nil.
func (m *Machine) Group(name string) *Group {
	return rlocked(m, func() *Group { return m.groups[name] })
}

// Groups returns every group, ordered by name, and the group index.
func (m *Machine) Groups() ([]*Group, uint64) {
	return byKeyLocked(m, func() (map[string]*Group, uint64) { return m.groups, m.groupIndex })
}

// Control returns the controls of key (zero when it has none).
func (m *Machine) Control(key string) KeyControl {
	return rlocked(m, func() KeyControl { return m.controls[key] })
}

// Drained reports whether an operator drained worker.
func (m *Machine) Drained(worker string) bool {
	return rlocked(m, func() bool { return m.drained[worker] })
}

// DrainedWorkers returns the drained workers, sorted.
func (m *Machine) DrainedWorkers() []string {
	return rlocked(m, func() []string { return sortedKeysOf(m.drained) })
}

// GroupIndex is the highest Raft index that changed a group, a key control
// or a drain mark.
func (m *Machine) GroupIndex() uint64 { return rlocked(m, func() uint64 { return m.groupIndex }) }
