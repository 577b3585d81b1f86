package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenure-io/tenure/fsm"
)

// Bounds of the remaining times a stopping leader hands over: with more
// leases, or longer keys, than these it hands none over and its successor
// restarts every lease at a full TTL, rather than write tens of megabytes
// while no lease can be renewed.
const (
	handoverMaxLeases = 100_000
	handoverMaxBytes  = 8 << 20
)

// Handover prepares this node's exit. When it leads and another voter can
// take over, it stops serving writes, renewals and linearizable reads (they
// get ErrNotReady, which clients retry at once elsewhere), writes the time
// every lease has left into the log (handOverLeaseTimes), hands leadership
// to the most up-to-date voter, and waits until this node hears from the
// new leader or ctx ends. It returns the new leader's id, or "" with a nil
// error when there is nothing to hand over (a follower, or the only voter).
//
// The new leader starts each lease with the time it had left here (plus a
// bound on the clocks' rate difference), instead of a full TTL
// (docs/adr/0018-graceful-leader-stop.md).
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
	var gen uint64                       // the lessor's freeze, 0 when not frozen
	if p := n.leading.Load(); p != nil { // a leader still establishing has nothing to hand over
		gen, err = n.handOverLeaseTimes(p.term)
		if err != nil {
			n.endHandover(gen)
			if errors.Is(err, ErrLeadershipLost) {
				return "", nil // lost leadership meanwhile: nothing to hand over
			}
			return "", err
		}
	}
	leader, err := n.TransferLeadership(ctx, "")
	if err != nil {
		if gen != 0 {
			n.endHandover(gen)
		}
		if errors.Is(err, ErrNotLeader) {
			return "", nil
		}
		return "", err
	}
	if gen != 0 {
		// A follower now: it serves nothing before it establishes again,
		// with a LeaderEstablished after the Handover.
		n.lessor.UnfreezeIf(gen)
	}
	n.log.Info("leadership_handed_over", "to", leader, "took", time.Since(start).Round(time.Millisecond))
	return leader, nil
}

// handOverLeaseTimes freezes the lessor (no renewal restarts a deadline
// from here on), reads the time every lease has left, and commits it as a
// Handover of term. It returns the number of the lessor's freeze, or 0
// when there was nothing to hand over or too much, and nothing was
// written.
func (n *Node) handOverLeaseTimes(term uint64) (uint64, error) {
	leases, gen := n.lessor.Freeze(handoverMaxLeases)
	if gen == 0 {
		n.log.Info("handover_without_lease_times", "reason", "not serving, or more leases than the limit", "limit", handoverMaxLeases)
		return 0, nil
	}
	size := 0
	for _, l := range leases {
		size += len(l.Key) + 32 // the key's length and three varints at most
	}
	if size > handoverMaxBytes {
		n.lessor.UnfreezeIf(gen) // nothing written: renewals may go on
		n.log.Info("handover_without_lease_times", "reason", "entry too large", "bytes", size, "limit", handoverMaxBytes)
		return 0, nil
	}
	res, err := n.applyCommand(fsm.Handover{Term: term, Leases: leases})
	if err != nil {
		return gen, err
	}
	if r, ok := res.(fsm.Result); ok && r.Code == fsm.Refused {
		return gen, fmt.Errorf("hand-over of term %d refused: a newer leader has established", term)
	}
	n.handoverCommitted.Store(gen)
	n.log.Info("lease_times_handed_over", "leases", len(leases), "term", term)
	return gen, nil
}

// endHandover runs when a hand-over did not complete. Its lessor stays
// frozen, Promote included, until no later leader can use the Handover
// with renewals it does not know: when this node no longer leads (it
// writes a LeaderEstablished before it serves again), or once it has
// committed a LeaderEstablished of its own after the Handover. Raft
// refuses entries until its transfer's TimeoutNow returns, which may be
// after the transfer has failed, so the LeaderEstablished is retried for
// up to HandoverTimeout; if it still cannot be committed, renewals stay
// refused until this node establishes again or stops leading (a stopping
// server stops anyway).
func (n *Node) endHandover(gen uint64) {
	deadline := time.Now().Add(n.cfg.HandoverTimeout())
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		if !n.IsLeader() {
			n.lessor.UnfreezeIf(gen)
			return
		}
		p := n.leading.Load()
		if p == nil {
			return // establishing: establish unfreezes once its entry follows the Handover
		}
		_, err := n.applyCommand(fsm.LeaderEstablished{Term: p.term})
		if err == nil {
			n.lessor.UnfreezeIf(gen)
			n.log.Info("handover_voided", "term", p.term)
			return
		}
		if !errors.Is(err, ErrNotReady) || time.Now().Add(wait).After(deadline) {
			n.log.Warn("handover_not_voided", "error", err)
			return
		}
		select {
		case <-time.After(wait):
		case <-n.shutdownCh:
			return
		}
	}
}
