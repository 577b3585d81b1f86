package cluster

import (
	"context"
	"errors"
	"time"
)

// HandoverTimeout is how long Handover waits for a new leader by default:
// a few election timeouts, enough for the target to catch up and win its
// election, short enough that a stopping server does not hang.
func (c Config) HandoverTimeout() time.Duration {
	d := 3 * c.ElectionTimeout
	if d < time.Second {
		d = time.Second
	}
	return d
}

// Handover prepares this node's exit. When it leads and another voter can
// take over, it stops serving writes, renewals and linearizable reads (they
// get ErrNotReady, which clients retry at once elsewhere), hands leadership
// to the most up-to-date voter, and waits until this node hears from the
// new leader or ctx ends. It returns the new leader's id, or "" with a nil
// error when there is nothing to hand over (a follower, or the only voter).
//
// The new leader restarts every held lease at a full TTL when it
// establishes, as after any failover (docs/adr/0018-graceful-leader-stop.md
// says why remaining times are not handed over).
func (n *Node) Handover(ctx context.Context) (string, error) {
	if !n.IsLeader() {
		return "", nil
	}
	others, err := n.otherVoters()
	if err != nil {
		return "", err
	}
	if others == 0 {
		return "", nil
	}
	n.handingOver.Store(true)
	defer n.handingOver.Store(false)
	start := time.Now()
	leader, err := n.TransferLeadership(ctx, "")
	if err != nil {
		if errors.Is(err, ErrNotLeader) {
			return "", nil // lost leadership meanwhile: nothing to hand over
		}
		return "", err
	}
	n.log.Info("leadership_handed_over", "to", leader, "took", time.Since(start).Round(time.Millisecond))
	return leader, nil
}
