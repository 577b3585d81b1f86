package cluster

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// appliedIndex is the highest Raft index the state machine has consumed:
// commands and configuration entries, through checkedFSM, and restored
// snapshots. Linearizable reads wait on it (Node.waitApplied).
type appliedIndex struct {
	index   atomic.Uint64
	waiting atomic.Int32

	mu      sync.Mutex
	waiters []appliedWaiter
}

type appliedWaiter struct {
	index uint64
	ch    chan struct{}
}

// set records that every entry up to i has been consumed.
func (a *appliedIndex) set(i uint64) {
	if i <= a.index.Load() {
		return
	}
	a.index.Store(i)
	if a.waiting.Load() == 0 {
		return
	}
	a.mu.Lock()
	kept := a.waiters[:0]
	for _, w := range a.waiters {
		if w.index <= i {
			close(w.ch)
			a.waiting.Add(-1)
		} else {
			kept = append(kept, w)
		}
	}
	a.waiters = kept
	a.mu.Unlock()
}

// wait returns a channel closed once the index reaches i, and a function
// that withdraws the wait.
func (a *appliedIndex) wait(i uint64) (<-chan struct{}, func()) {
	ch := make(chan struct{})
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.index.Load() >= i {
		close(ch)
		return ch, func() {}
	}
	a.waiters = append(a.waiters, appliedWaiter{index: i, ch: ch})
	a.waiting.Add(1)
	return ch, func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		for k, w := range a.waiters {
			if w.ch == ch {
				a.waiters = append(a.waiters[:k], a.waiters[k+1:]...)
				a.waiting.Add(-1)
				return
			}
		}
	}
}

// appliedRecheck is how often a waiting read looks whether the entries it
// still waits for are ones the state machine never sees.
const appliedRecheck = 2 * time.Millisecond

// waitApplied blocks until the state machine has applied every entry up to
// index (the commit index at the start of a read's leadership round), or
// ctx ends. Raft sends the state machine commands and configurations
// only: a no-op or barrier entry at the end of the log never moves its
// index, so once Raft has dispatched everything up to index, entries the
// state machine will never see are skipped by looking at their type.
func (n *Node) waitApplied(ctx context.Context, index uint64) error {
	if n.applied.index.Load() >= index {
		return nil
	}
	ch, cancel := n.applied.wait(index)
	defer cancel()
	t := time.NewTicker(appliedRecheck)
	defer t.Stop()
	for {
		select {
		case <-ch:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-n.shutdownCh:
			return ErrShutdown
		case <-t.C:
			if n.onlyInvisibleUpTo(index) {
				return nil
			}
		}
	}
}

// onlyInvisibleUpTo reports whether Raft has dispatched every entry up to
// index to the state machine and none of those it has not consumed yet is
// a command or a configuration.
func (n *Node) onlyInvisibleUpTo(index uint64) bool {
	if n.raft.AppliedIndex() < index {
		return false
	}
	for i := n.applied.index.Load() + 1; i <= index; i++ {
		var l raft.Log
		if err := n.store.GetLog(i, &l); err != nil {
			return false
		}
		if l.Type == raft.LogCommand || l.Type == raft.LogConfiguration {
			return false
		}
	}
	return true
}
