package cluster

import (
	"strings"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/fsm"
)

// presenceWorkers are the workers that announce themselves with a presence
// lease (wire.PresencePrefix) instead of gossip: one alive member per held
// lease whose holder and metadata make a valid announcement. Every node
// reads them from its replicated state, so a new leader knows them at
// once; a worker is gone when its lease ends (released, or expired on the
// leader's clock).
func presenceWorkers(m *fsm.Machine) []Member {
	leases, _ := m.List(fsm.Filter{Prefix: wire.PresencePrefix, State: "held"})
	var out []Member
	for _, l := range leases {
		meta, err := wire.PresenceMeta(l.Key, l.Holder, l.Metadata)
		if err != nil {
			continue // not an announcement: it places nothing
		}
		out = append(out, Member{Name: strings.TrimPrefix(l.Key, wire.PresencePrefix), Status: "alive", Meta: meta})
	}
	return out
}

// presenceIndex changes whenever a presence lease is taken, changed or
// ended: the balancer plans again when it does.
func presenceIndex(m *fsm.Machine) uint64 {
	leases, _ := m.List(fsm.Filter{Prefix: wire.PresencePrefix, State: "held"})
	sum := uint64(len(leases))
	for _, l := range leases {
		sum = sum*31 + l.ModifyIndex
	}
	return sum
}

// workerMembers are the gossip members and the workers of presence leases.
func (n *Node) workerMembers() []Member {
	return append(n.Members(), presenceWorkers(n.machine)...)
}
