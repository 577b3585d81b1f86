package rounds

import (
	"io"
	"sync"
	"time"

	"github.com/hashicorp/raft"
)

// LagTracker follows how far this node's applied index trails the
// leader's commit index. A follower learns the leader's commit index from
// the AppendEntries requests it receives (heartbeats carry none), whether
// or not it could store their entries: a follower whose disk is full keeps
// hearing the leader and keeps learning how far ahead it is.
//
// The time behind is measured with a mark: the commit index the leader
// had announced at markAt. While the applied index is below the mark, the
// node has been behind for at least now − markAt; once it reaches the
// mark, the mark moves to the leader's commit index of that moment. So a
// node that applies steadily is behind by the time it takes to apply, and
// one that applies nothing is behind by the time since the first entry it
// has not applied was announced.
type LagTracker struct {
	now func() time.Time

	mu           sync.Mutex
	leaderCommit uint64
	markIndex    uint64
	markAt       time.Time
}

// NewLagTracker returns a tracker that reads the time from now.
func NewLagTracker(now func() time.Time) *LagTracker {
	return &LagTracker{now: now}
}

// observeCommit records a commit index announced by a leader. Committed
// entries stay committed whatever the term, so the highest one is kept.
func (l *LagTracker) observeCommit(commit uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leaderCommit = max(l.leaderCommit, commit)
	if l.markIndex == 0 {
		l.markIndex, l.markAt = l.leaderCommit, l.now()
	}
}

// Lag is how far this node is behind the leader.
type Lag struct {
	// LeaderCommit is the highest commit index this node knows of: the
	// leader's as last announced, or its own when it leads.
	LeaderCommit uint64
	// Applied is this node's applied index.
	Applied uint64
	// Entries is LeaderCommit − Applied, 0 when caught up.
	Entries uint64
	// For is how long Applied has been below a commit index the leader
	// announced; 0 when caught up.
	For time.Duration
}

// Lag reports the lag for the applied index applied; ownCommit is this
// node's own commit index (the leader's when this node leads).
func (l *LagTracker) Lag(applied, ownCommit uint64) Lag {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leaderCommit = max(l.leaderCommit, ownCommit)
	s := Lag{LeaderCommit: l.leaderCommit, Applied: applied}
	if applied >= l.leaderCommit {
		l.markIndex, l.markAt = 0, time.Time{}
		return s
	}
	s.Entries = l.leaderCommit - applied
	if l.markIndex == 0 || applied >= l.markIndex {
		l.markIndex, l.markAt = l.leaderCommit, now
	}
	s.For = now.Sub(l.markAt)
	return s
}

// watchedTransport is the node's Raft transport as Raft sees it (Wrap).
// It shows every AppendEntries request this node receives to a LagTracker
// before Raft handles it, records every answered AppendEntries and
// InstallSnapshot it sends in Contacts, and makes its InstallSnapshot
// calls one at a time (installs). It also holds every inbound RPC back
// until the node has checked its data dir's identity against the Raft
// state it started with (open): a data dir that turns out to hold another
// cluster's state never answers a vote or an append of this cluster. Its
// outbound pipelines are wrapped by guard (the hub's pipeline guard,
// docs/adr/0020-guarded-raft-pipelines.md). Everything else passes
// through unchanged.
type watchedTransport struct {
	raft.Transport
	lag   *LagTracker
	seen  *Contacts
	guard func(raft.AppendPipeline) raft.AppendPipeline
	// installs holds one token per snapshot this leader is sending. A
	// follower installing a large snapshot (a restore of 39 MB) may not
	// answer heartbeats in time while it decodes it; sent to every
	// follower at once, the leader then hears from no quorum and steps
	// down. One at a time, the others keep answering.
	installs chan struct{}
	once     sync.Once
	ch       chan raft.RPC
	done     chan struct{}
	stop     sync.Once
	gate     chan struct{}
	gateOnce sync.Once
}

// open lets the inbound RPCs through.
func (t *watchedTransport) open() { t.gateOnce.Do(func() { close(t.gate) }) }

// Wrap wraps t, showing every AppendEntries request it receives to lag,
// recording the answers to its own in seen, with inbound RPCs held back
// until open is called, and every pipeline it opens wrapped by guard
// (unless guard is nil). Raft looks for the optional WithPreVote
// interface on its transport, so the wrapper has it exactly when t has it.
func Wrap(t raft.Transport, lag *LagTracker, seen *Contacts, guard func(raft.AppendPipeline) raft.AppendPipeline) (raft.Transport, func()) {
	wt := &watchedTransport{Transport: t, lag: lag, seen: seen, guard: guard, installs: make(chan struct{}, 1),
		ch: make(chan raft.RPC), done: make(chan struct{}), gate: make(chan struct{})}
	if _, ok := t.(raft.WithPreVote); ok {
		return &preVoteTransport{wt}, wt.open
	}
	return wt, wt.open
}

// Consumer passes on the RPCs of the wrapped transport, noting the commit
// index of each AppendEntries request. Its goroutine ends when the
// transport is closed.
func (t *watchedTransport) Consumer() <-chan raft.RPC {
	t.once.Do(func() {
		in := t.Transport.Consumer()
		go func() {
			select {
			case <-t.gate:
			case <-t.done:
				return
			}
			for {
				select {
				case rpc := <-in:
					if ae, ok := rpc.Command.(*raft.AppendEntriesRequest); ok && ae.LeaderCommitIndex > 0 {
						t.lag.observeCommit(ae.LeaderCommitIndex)
					}
					select {
					case t.ch <- rpc:
					case <-t.done:
						return
					}
				case <-t.done:
					return
				}
			}
		}()
	})
	return t.ch
}

func (t *watchedTransport) AppendEntries(id raft.ServerID, target raft.ServerAddress, args *raft.AppendEntriesRequest, resp *raft.AppendEntriesResponse) error {
	err := t.Transport.AppendEntries(id, target, args, resp)
	if err == nil {
		t.seen.answered(id, target, resp.LastLog, true)
	}
	return err
}

func (t *watchedTransport) InstallSnapshot(id raft.ServerID, target raft.ServerAddress, args *raft.InstallSnapshotRequest, resp *raft.InstallSnapshotResponse, data io.Reader) error {
	t.installs <- struct{}{}
	err := t.Transport.InstallSnapshot(id, target, args, resp, data)
	<-t.installs
	if err == nil {
		t.seen.answered(id, target, 0, false)
	}
	return err
}

// AppendEntriesPipeline guards the wrapped transport's pipelines.
func (t *watchedTransport) AppendEntriesPipeline(id raft.ServerID, target raft.ServerAddress) (raft.AppendPipeline, error) {
	p, err := t.Transport.AppendEntriesPipeline(id, target)
	if err != nil {
		return nil, err
	}
	if t.guard == nil {
		return p, nil
	}
	return t.guard(p), nil
}

// Close implements raft.WithClose: it ends the Consumer goroutine and
// closes the wrapped transport if it can be closed.
func (t *watchedTransport) Close() error {
	t.stop.Do(func() { close(t.done) })
	if c, ok := t.Transport.(raft.WithClose); ok {
		return c.Close()
	}
	return nil
}

type preVoteTransport struct{ *watchedTransport }

func (t *preVoteTransport) RequestPreVote(id raft.ServerID, target raft.ServerAddress, args *raft.RequestPreVoteRequest, resp *raft.RequestPreVoteResponse) error {
	return t.Transport.(raft.WithPreVote).RequestPreVote(id, target, args, resp)
}
