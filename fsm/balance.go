package fsm

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"
)

// Balance is how the balancer places a group's keys. The zero value (and a
// group without one) places by count: as even a number of keys per worker
// as their capacities allow, with no bound on the keys moving at once.
type Balance struct {
	// ByLoad places keys by load instead: each worker gets a share of the
	// group's load in proportion to the load it can carry, and keys move
	// only while some worker's share is off by more than Threshold, at
	// most MoveBudget keys per MoveInterval.
	ByLoad       bool
	Threshold    float64
	MoveBudget   int
	MoveInterval time.Duration
	// Weights are the operator's loads of keys of the group: where one is
	// set it is the key's load, whatever its holders report.
	Weights map[string]float64
	// MaxMoving is the group's availability budget: the balancer moves a
	// key away from a live worker that holds it only while fewer than
	// MaxMoving keys of the group are unowned or on their way to a new
	// target; 0: no bound.
	MaxMoving int
}

// GroupBalance sets the Balance of a group, replacing the one it had
// (weights included). Its keys, plan and other settings are untouched.
type GroupBalance struct {
	Name    string
	Balance Balance
}

func (GroupBalance) Type() Type { return TypeGroupBalance }

func (c GroupBalance) encode(e *encoder) {
	e.string(c.Name)
	c.Balance.encode(e)
}

// encode writes b as GroupBalance and the snapshot's balance section keep
// it: floats as their IEEE 754 bits, weights sorted by key.
func (b Balance) encode(e *encoder) {
	e.bool(b.ByLoad)
	e.uvarint(math.Float64bits(b.Threshold))
	e.varint(int64(b.MoveBudget))
	e.varint(int64(b.MoveInterval))
	e.varint(int64(b.MaxMoving))
	keys := slices.Sorted(maps.Keys(b.Weights))
	e.uvarint(uint64(len(keys)))
	for _, k := range keys {
		e.string(k)
		e.uvarint(math.Float64bits(b.Weights[k]))
	}
}

func decodeBalance(d *decoder) Balance {
	b := Balance{ByLoad: d.bool(), Threshold: math.Float64frombits(d.uvarint()),
		MoveBudget: int(d.varint()), MoveInterval: time.Duration(d.varint()), MaxMoving: int(d.varint())}
	d.sortedEntries("weights", func(k string) {
		if b.Weights == nil {
			b.Weights = make(map[string]float64)
		}
		b.Weights[k] = math.Float64frombits(d.uvarint())
	})
	return b
}

// setBalance applies GroupBalance. m.mu is held.
func (m *Machine) setBalance(index uint64, c GroupBalance) Result {
	return m.changeGroup(index, c.Name, func(_, next *Group) {
		b := c.Balance
		b.Weights = maps.Clone(b.Weights)
		next.Balance = &b
		if !b.ByLoad && len(b.Weights) == 0 && b.MaxMoving == 0 {
			next.Balance = nil // by count, as a group that never had one
		}
		m.emit(Event{Type: EventGroupChanged, Group: c.Name, Reason: GroupBalanceSet})
	})
}

// encodeBalances writes the snapshot's version 8 section: the count of
// groups that have a Balance, then for each (sorted by name) its name and
// Balance.
func encodeBalances(e *encoder, st state) {
	var with []*Group
	for _, g := range st.groups {
		if g.Balance != nil {
			with = append(with, g)
		}
	}
	e.uvarint(uint64(len(with)))
	for _, g := range with {
		e.string(g.Name)
		g.Balance.encode(e)
	}
}

// decodeBalances reads what encodeBalances wrote into the groups that
// decodePlacement read.
func decodeBalances(d *decoder, st *state) {
	byName := make(map[string]*Group, len(st.groups))
	for _, g := range st.groups {
		byName[g.Name] = g
	}
	d.sortedEntries("group balances", func(name string) {
		b := decodeBalance(d)
		if g := byName[name]; g != nil {
			g.Balance = &b
		} else {
			d.fail(fmt.Errorf("balance of unknown group %q", name))
		}
	})
}
