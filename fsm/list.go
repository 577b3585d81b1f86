package fsm

import (
	"math"
	"sort"
	"strings"
)

// Filter selects leases for List. Zero fields match everything.
type Filter struct {
	Prefix string
	// State is "held", "free" or "" for both.
	State  string
	Holder string
	// NeverAcquired, with State "free", also lists the keys of groups that
	// have no lease record (never acquired, or forgotten): each as a free
	// record with no holder, Token 0 and ReasonNeverAcquired. A Holder
	// filter excludes them.
	NeverAcquired bool
}

func (f Filter) match(l *Lease) bool {
	if !strings.HasPrefix(l.Key, f.Prefix) {
		return false
	}
	if f.Holder != "" && l.Holder != f.Holder {
		return false
	}
	switch f.State {
	case "held":
		return l.Held
	case "free":
		return !l.Held
	}
	return true
}

// List returns the leases that match f, ordered by key, and the index
// they were read at: the lease index, or, when f lists never-acquired
// group keys, the higher of the lease and group indexes (a group change
// changes that answer too). It copies every match under the read lock:
// callers that answer clients use ListPage.
func (m *Machine) List(f Filter) ([]*Lease, uint64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	res := m.page(f, "", math.MaxInt-1, math.MaxInt)
	if res.Leases == nil {
		res.Leases = []*Lease{}
	}
	return res.Leases, res.Index
}

// inGroup reports whether key belongs to a group. m.mu is held.
func (m *Machine) inGroup(key string) bool {
	for _, g := range m.groups {
		if i := sort.SearchStrings(g.Keys, key); i < len(g.Keys) && g.Keys[i] == key {
			return true
		}
	}
	return false
}

// InGroup reports whether key belongs to a group.
func (m *Machine) InGroup(key string) bool { return rlocked(m, func() bool { return m.inGroup(key) }) }
