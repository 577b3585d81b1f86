//go:build linux

package netns

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Mechanisms of Delay, as DelaySupported reports them.
const (
	DelayNetem   = "netem"
	DelayNFQueue = "nfqueue"
)

// Shaping degrades the packets a node sends on eth0.
type Shaping struct {
	// Delay holds every packet back this long, give or take Jitter.
	Delay, Jitter time.Duration
	// Loss is the probability, 0 to 1, that a packet is lost. Packets to
	// the hub are never lost.
	Loss float64
}

func (s Shaping) String() string {
	return fmt.Sprintf("delay=%v jitter=%v loss=%.1f%%", s.Delay, s.Jitter, s.Loss*100)
}

func (s Shaping) delays() bool { return s.Delay > 0 || s.Jitter > 0 }

// DelaySupported says how Shape implements Delay on this kernel: "netem",
// "nfqueue", or "" when it cannot, in which case Shape with a Delay or a
// Jitter fails.
func (n *Net) DelaySupported() string { return n.delay }

// probeDelay finds out how this kernel can delay packets: with netem,
// tried on the hub's loopback, or else with a netfilter queue bound in
// the hub.
func (n *Net) probeDelay() string {
	if _, err := exec.LookPath("tc"); err == nil {
		if _, err := run("tc", "-n", n.hubNS, "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"); err == nil {
			if _, err := run("tc", "-n", n.hubNS, "qdisc", "del", "dev", "lo", "root"); err != nil {
				n.log.Warn("cannot remove the netem probe from the hub's loopback", "error", err)
			}
			return DelayNetem
		}
	}
	d, err := startDelayer(n.hubNS, n.log)
	if err == nil {
		err = d.setQueue(probeQueue, 0, 0)
		d.stop()
	}
	if err != nil {
		n.log.Warn("neither netem nor NFQUEUE works: Shape cannot delay", "error", err)
		return ""
	}
	return DelayNFQueue
}

// Shape degrades the packets node sends on eth0 as s says, replacing any
// earlier shaping of node; the zero Shaping clears it.
//
// Loss is enforced where the packets arrive, by an iptables statistic rule
// in TNJ-SHAPE of every other node, so a lost packet is silently lost, as
// on a wire; the hub receives everything. Delay and Jitter apply to every
// packet, to the hub too. With netem they are a qdisc on node's eth0.
// Otherwise every other namespace, the hub included, queues the packets
// from node (NFQUEUE, queue number = the last octet of node's address) to
// a delayer of this process that accepts each Delay±Jitter after it
// arrived, in the order they arrived: jitter never reorders.
func (n *Net) Shape(node string, s Shaping) error {
	nd, err := n.node(node)
	if err != nil {
		return fmt.Errorf("shape: %w", err)
	}
	if s.Delay < 0 || s.Jitter < 0 || s.Loss < 0 || s.Loss > 1 {
		return fmt.Errorf("shape %s: invalid %v", node, s)
	}
	if s.delays() && n.delay == "" {
		return fmt.Errorf("shape %s: this kernel has neither netem nor NFQUEUE to delay packets", node)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.usable(); err != nil {
		return fmt.Errorf("shape %s: %w", node, err)
	}
	if s == (Shaping{}) {
		return n.clearShaping(nd)
	}
	old, had := n.shapes[node]
	switch {
	case n.delay == DelayNetem && s.delays():
		if _, err := run("tc", "-n", nd.ns, "qdisc", "replace", "dev", "eth0", "root", "netem",
			"delay", usec(s.Delay), usec(s.Jitter)); err != nil {
			return fmt.Errorf("shape %s: %w", node, err)
		}
	case n.delay == DelayNetem && old.delays():
		n.removeNetem(nd)
	case s.delays():
		for _, r := range n.receivers() {
			if r == nd {
				continue
			}
			d, err := n.delayerIn(r)
			if err == nil {
				err = d.setQueue(uint16(nd.index), s.Delay, s.Jitter)
			}
			if err != nil {
				return fmt.Errorf("shape %s: %w", node, err)
			}
		}
	}
	n.shapes[node] = s
	if err := n.applyShaping(); err != nil {
		if had {
			n.shapes[node] = old
		} else {
			delete(n.shapes, node)
		}
		return fmt.Errorf("shape %s: %w", node, errors.Join(err, n.applyShaping()))
	}
	n.log.Info("shaping", "node", node, "delay", s.Delay, "jitter", s.Jitter, "loss", s.Loss)
	return nil
}

// delayerIn returns the delayer of r's namespace, started on first use; it
// runs until Close.
func (n *Net) delayerIn(r *node) (*delayer, error) {
	if d := n.delayers[r.ns]; d != nil {
		return d, nil
	}
	d, err := startDelayer(r.ns, n.log)
	if err != nil {
		return nil, err
	}
	n.delayers[r.ns] = d
	return d, nil
}

// applyShaping writes the shaping rules of every namespace from n.shapes
// and n.links.
func (n *Net) applyShaping() error {
	return eachNode(n.receivers(), func(r *node) error { return n.restore(r, n.shapeRules(r)) })
}

// shapeRules returns the rules of r's TNJ-SHAPE: loss first, then the
// delayed links into r, then the delay of shaped senders. A packet leaves
// the chain at its first NFQUEUE rule, so a delayed link replaces, for
// that link, the Delay of a shaped sender; loss applies to both.
func (n *Net) shapeRules(r *node) []string {
	rules := []string{"-F " + chainShape}
	var delays []string
	for _, name := range n.order {
		s, ok := n.shapes[name]
		src := n.nodes[name]
		if !ok || src == r {
			continue
		}
		if s.Loss > 0 && r != n.hub {
			rules = append(rules, fmt.Sprintf("-A %s -s %s/32 -m statistic --mode random --probability %.6f -j DROP",
				chainShape, src.addr, s.Loss))
		}
		if s.delays() && n.delay == DelayNFQueue {
			delays = append(delays, fmt.Sprintf("-A %s -s %s/32 -j NFQUEUE --queue-num %d --queue-bypass",
				chainShape, src.addr, src.index))
		}
	}
	for _, name := range n.order {
		if _, ok := n.links[r.name][name]; ok {
			src := n.nodes[name]
			rules = append(rules, fmt.Sprintf("-A %s -s %s/32 -j NFQUEUE --queue-num %d --queue-bypass",
				chainShape, src.addr, linkQueue(src)))
		}
	}
	return append(rules, delays...)
}

// ClearShaping removes every shaping of node and every delayed link from
// or to node (DelayLink). Packets already held back still go at their due
// time.
func (n *Net) ClearShaping(node string) error {
	nd, err := n.node(node)
	if err != nil {
		return fmt.Errorf("clear shaping: %w", err)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.usable(); err != nil {
		return fmt.Errorf("clear shaping of %s: %w", node, err)
	}
	return n.clearShaping(nd)
}

func (n *Net) clearShaping(nd *node) error {
	old, had := n.shapes[nd.name]
	delete(n.shapes, nd.name)
	linked := len(n.links[nd.name]) > 0
	delete(n.links, nd.name)
	for to, from := range n.links {
		if _, ok := from[nd.name]; ok {
			linked = true
			delete(from, nd.name)
			if len(from) == 0 {
				delete(n.links, to)
			}
		}
	}
	if err := n.applyShaping(); err != nil {
		return fmt.Errorf("clear shaping of %s: %w", nd.name, err)
	}
	if n.delay == DelayNetem && old.delays() {
		n.removeNetem(nd)
	}
	if had || linked {
		n.log.Info("shaping cleared", "node", nd.name)
	}
	return nil
}

// removeNetem deletes the root qdisc of nd's eth0.
func (n *Net) removeNetem(nd *node) {
	if _, err := run("tc", "-n", nd.ns, "qdisc", "del", "dev", "eth0", "root"); err != nil {
		n.log.Warn("cannot remove netem", "node", nd.name, "error", err)
	}
}

func usec(d time.Duration) string { return fmt.Sprintf("%dus", d.Microseconds()) }

// Describe returns the drop rules and shaping in force, as recorded and as
// iptables lists them in every namespace, for the results of a run.
func (n *Net) Describe() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "network %s: delay by %q\n", n.prefix, n.delay)
	if n.closed {
		b.WriteString("closed\n")
		return b.String()
	}
	for _, r := range n.receivers() {
		fmt.Fprintf(&b, "%s %s (namespace %s)\n", r.name, r.addr, r.ns)
		if from := sortedKeys(n.drops[r.name]); len(from) > 0 {
			fmt.Fprintf(&b, "  drops packets from: %s\n", strings.Join(from, " "))
		}
		if s, ok := n.shapes[r.name]; ok {
			fmt.Fprintf(&b, "  egress shaped: %v\n", s)
		}
		for _, from := range n.order {
			if d, ok := n.links[r.name][from]; ok {
				fmt.Fprintf(&b, "  delays packets from %s by %v\n", from, d)
			}
		}
		if d := n.delayers[r.ns]; d != nil {
			fmt.Fprintf(&b, "  delayer: %s\n", d.stats())
		}
		chains := []string{chainIn, chainShape}
		if r == n.hub {
			chains = chains[1:]
		}
		for _, chain := range chains {
			out, err := run("ip", "netns", "exec", r.ns, "iptables", "-S", chain)
			if err != nil {
				fmt.Fprintf(&b, "  cannot list %s: %v\n", chain, err)
			}
			for _, line := range strings.Split(out, "\n") {
				if strings.HasPrefix(line, "-A ") {
					fmt.Fprintf(&b, "  rule: %s\n", line)
				}
			}
		}
	}
	return b.String()
}
