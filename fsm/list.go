package fsm

import (
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
// changes that answer too).
func (m *Machine) List(f Filter) ([]*Lease, uint64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]*Lease, 0, len(m.leases))
	for _, l := range m.leases {
		if f.match(l) {
			out = append(out, l)
		}
	}
	index := m.leaseIndex
	if f.NeverAcquired && f.State == "free" && f.Holder == "" {
		out = append(out, m.neverAcquired(f.Prefix)...)
		index = max(index, m.groupIndex)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, index
}

// neverAcquired returns a free record for each key of a group that starts
// with prefix and has no lease record, once each. m.mu is held.
func (m *Machine) neverAcquired(prefix string) []*Lease {
	var out []*Lease
	seen := make(map[string]bool)
	for _, g := range m.groups {
		// Keys are sorted: start at the first one with the prefix.
		for i := sort.SearchStrings(g.Keys, prefix); i < len(g.Keys) && strings.HasPrefix(g.Keys[i], prefix); i++ {
			k := g.Keys[i]
			if m.leases[k] != nil || seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, &Lease{Key: k, Reason: ReasonNeverAcquired})
		}
	}
	return out
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
func (m *Machine) InGroup(key string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.inGroup(key)
}
