//go:build linux

package netns

import (
	"errors"
	"fmt"
	"time"
)

// linkQueueBase offsets the queue numbers of delayed links from those of
// Shape (a node's last octet, below 256), so that a node can be shaped and
// have its link to one receiver delayed at the same time.
const linkQueueBase = 256

// linkQueue is the queue, in the receiver's namespace, of the packets
// from src on a delayed link.
func linkQueue(src *node) uint16 { return uint16(linkQueueBase + src.index) }

// DelayLink holds back by d the packets from node from that arrive at
// node to, and only those: a congested link in one direction. Packets
// from from to any other node, and every packet to from, are untouched.
// It replaces an earlier delay of the same link; d = 0 clears it, as does
// ClearShaping of either node. Packets already held back still go at their
// due time.
//
// The delay is always an NFQUEUE rule in to's TNJ-SHAPE and the delayer of
// to's namespace (queue number 256 + the last octet of from's address),
// whatever DelaySupported says: netem on from's eth0 would delay the
// packets to every node. DelayLink fails if that delayer cannot start.
func (n *Net) DelayLink(from, to string, d time.Duration) error {
	src, dst, err := n.link(from, to)
	if err != nil {
		return fmt.Errorf("delay link: %w", err)
	}
	if d < 0 {
		return fmt.Errorf("delay link %s->%s: negative delay %v", from, to, d)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if err := n.usable(); err != nil {
		return fmt.Errorf("delay link %s->%s: %w", from, to, err)
	}
	old, had := n.links[to][from]
	if d == 0 {
		if !had {
			return nil
		}
		n.setLink(from, to, 0, false)
		if err := n.applyShaping(); err != nil {
			n.setLink(from, to, old, true)
			return fmt.Errorf("clear delay of link %s->%s: %w", from, to, errors.Join(err, n.applyShaping()))
		}
		n.log.Info("link delay cleared", "from", from, "to", to)
		return nil
	}
	dl, err := n.delayerIn(dst)
	if err != nil {
		return fmt.Errorf("delay link %s->%s: cannot start the NFQUEUE delayer: %w", from, to, err)
	}
	if err := dl.setQueue(linkQueue(src), d, 0); err != nil {
		return fmt.Errorf("delay link %s->%s: %w", from, to, err)
	}
	n.setLink(from, to, d, true)
	if had {
		// The rule is in place: the new delay holds for the packets that
		// arrive from now on, and a delay that climbs in small steps
		// climbs smoothly.
		n.log.Debug("link delayed", "from", from, "to", to, "delay", d)
		return nil
	}
	if err := n.applyShaping(); err != nil {
		n.setLink(from, to, old, had)
		return fmt.Errorf("delay link %s->%s: %w", from, to, errors.Join(err, n.applyShaping()))
	}
	n.log.Info("link delayed", "from", from, "to", to, "delay", d)
	return nil
}

// setLink records (on) or forgets the delay of the link from -> to.
func (n *Net) setLink(from, to string, d time.Duration, on bool) {
	if !on {
		delete(n.links[to], from)
		if len(n.links[to]) == 0 {
			delete(n.links, to)
		}
		return
	}
	if n.links[to] == nil {
		n.links[to] = make(map[string]time.Duration)
	}
	n.links[to][from] = d
}
