//go:build linux

package netns

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
)

// Chains of the filter table, both jumped from INPUT. TNJ-IN, in the node
// namespaces only, holds the drop rules; TNJ-SHAPE, in the node namespaces
// and the hub, holds the loss and delay rules of the packets arriving from
// shaped nodes.
const (
	chainIn    = "TNJ-IN"
	chainShape = "TNJ-SHAPE"
)

// installChains creates the fault chains of nd, empty.
func (n *Net) installChains(nd *node) error {
	if nd == n.hub {
		return n.restore(nd, []string{":" + chainShape + " - [0:0]", "-A INPUT -j " + chainShape})
	}
	return n.restore(nd, []string{
		":" + chainIn + " - [0:0]",
		":" + chainShape + " - [0:0]",
		"-A INPUT -j " + chainIn,
		"-A INPUT -j " + chainShape,
	})
}

// restore applies rules to the filter table of nd in one transaction,
// leaving the rest of the table alone.
func (n *Net) restore(nd *node, rules []string) error {
	in := "*filter\n" + strings.Join(rules, "\n") + "\nCOMMIT\n"
	if _, err := runIn(in, "ip", "netns", "exec", nd.ns, "iptables-restore", "--noflush"); err != nil {
		return fmt.Errorf("iptables in %s: %w", nd.name, err)
	}
	return nil
}

// Drop makes node to drop every packet from node from: a one-way cut,
// enforced on to's INPUT with from's address as the source. Dropping what
// is already dropped is a no-op.
func (n *Net) Drop(from, to string) error {
	_, dst, err := n.link(from, to)
	if err != nil {
		return fmt.Errorf("drop: %w", err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.usable(); err != nil {
		return fmt.Errorf("drop: %w", err)
	}
	if n.drops[to][from] {
		return nil
	}
	set := map[string]bool{from: true}
	for f := range n.drops[to] {
		set[f] = true
	}
	if err := n.restore(dst, n.dropRules(set)); err != nil {
		return fmt.Errorf("drop %s->%s: %w", from, to, err)
	}
	n.drops[to] = set
	n.log.Info("dropping", "from", from, "to", to)
	return nil
}

// Block cuts a and b from each other in both directions.
func (n *Net) Block(a, b string) error {
	if err := n.Drop(a, b); err != nil {
		return err
	}
	return n.Drop(b, a)
}

// Partition replaces every drop rule in force with a partition into
// groups: a node talks only to the nodes of its own group, and a node
// listed in no group keeps talking to everyone. Each node's rules change in
// one transaction, the nodes concurrently, within milliseconds of each
// other.
func (n *Net) Partition(groups ...[]string) error {
	group := map[string]int{}
	for i, g := range groups {
		for _, name := range g {
			if _, err := n.node(name); err != nil {
				return fmt.Errorf("partition: %w", err)
			}
			if _, dup := group[name]; dup {
				return fmt.Errorf("partition: node %s is in two groups", name)
			}
			group[name] = i
		}
	}
	want := map[string]map[string]bool{}
	for _, to := range n.order {
		gt, ok := group[to]
		if !ok {
			continue
		}
		for _, from := range n.order {
			if gf, ok := group[from]; ok && gf != gt {
				if want[to] == nil {
					want[to] = map[string]bool{}
				}
				want[to][from] = true
			}
		}
	}
	return n.setDrops("partition", want, func() { n.log.Info("partitioned", "groups", groups) })
}

// Heal removes every drop rule of every node. Shaping stays.
func (n *Net) Heal() error {
	return n.setDrops("heal", nil, func() { n.log.Info("healed") })
}

// setDrops replaces the drop rules of every node with want (none when
// nil), then calls done, all under n's lock; its errors name op.
func (n *Net) setDrops(op string, want map[string]map[string]bool, done func()) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.usable(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := n.applyDrops(want); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	done()
	return nil
}

// applyDrops makes want (to -> from set) the drop rules of every node,
// the nodes concurrently. n.drops records what was applied, even on error.
func (n *Net) applyDrops(want map[string]map[string]bool) error {
	var mu sync.Mutex
	done := make(map[string]bool)
	err := eachNode(n.nodeList(), func(nd *node) error {
		if err := n.restore(nd, n.dropRules(want[nd.name])); err != nil {
			return err
		}
		mu.Lock()
		done[nd.name] = true
		mu.Unlock()
		return nil
	})
	for name := range done {
		if len(want[name]) == 0 {
			delete(n.drops, name)
		} else {
			n.drops[name] = want[name]
		}
	}
	return err
}

// dropRules returns the rules that make TNJ-IN drop packets from the
// nodes in from.
func (n *Net) dropRules(from map[string]bool) []string {
	rules := []string{"-F " + chainIn}
	for _, name := range sortedKeys(from) {
		rules = append(rules, fmt.Sprintf("-A %s -s %s/32 -j DROP", chainIn, n.nodes[name].addr))
	}
	return rules
}

func (n *Net) usable() error {
	if n.closed {
		return errors.New("network closed")
	}
	return nil
}

func sortedKeys(m map[string]bool) []string {
	return slices.Sorted(maps.Keys(m))
}
