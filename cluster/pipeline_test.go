package cluster_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// flakyLogStore fails the next StoreLogs of the nodes armed, once each,
// as a disk that was full for a moment would.
type flakyLogStore struct {
	raft.LogStore
	id    string
	armed *sync.Map // node id -> struct{}
}

func (s flakyLogStore) StoreLogs(logs []*raft.Log) error {
	if _, ok := s.armed.LoadAndDelete(s.id); ok {
		time.Sleep(20 * time.Millisecond) // a disk takes its time to fail
		return errors.New("write raft.db: no space left on device")
	}
	return s.LogStore.StoreLogs(logs)
}

func (s flakyLogStore) StoreLog(l *raft.Log) error { return s.StoreLogs([]*raft.Log{l}) }

// TestFollowerCatchesUpAfterFailedAppends: a follower that fails to
// append (its disk full for a moment) gets the entries again once it can
// write, every time. hashicorp/raft's pipelined replication over its
// network transport could stop for good after such a failure: the
// follower kept getting heartbeats, so nobody noticed, and it never got
// another entry until the leader changed (the failure seen as a full
// disk's follower that never caught up).
func TestFollowerCatchesUpAfterFailedAppends(t *testing.T) {
	armed := &sync.Map{}
	c := inproc.Start(t, 3, inproc.Options{TCP: true, Tweak: func(cfg *cluster.Config) {
		id := cfg.NodeID
		cluster.WrapLogStore(cfg, func(s raft.LogStore) raft.LogStore { return flakyLogStore{s, id, armed} })
	}})
	li := c.Leader()
	f := (li + 1) % c.Len()
	leader, follower := c.Node(li), c.Node(f)
	// Writes keep coming while the follower fails, as they do in
	// production: the leader's replication has new entries to send at
	// every moment.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				leader.Acquire(harness.Context(t, 5*time.Second), cluster.AcquireRequest{Secret: testSecret, Key: fmt.Sprintf("w%d-%d", w, i%100), Holder: "h", TTL: time.Minute})
			}
		})
	}
	defer wg.Wait()
	defer close(stop)
	for round := range 20 {
		armed.Store(c.Peer(f).ID, struct{}{})
		harness.WaitUntil(t, 5*time.Second, "the follower's failed append", func() bool {
			_, pending := armed.Load(c.Peer(f).ID)
			return !pending
		})
		want := leader.Health().LeaderCommit
		harness.WaitUntil(t, 5*time.Second, fmt.Sprintf("round %d: follower %s applies index %d after its failed append", round, c.Peer(f).ID, want), func() bool {
			return follower.Health().AppliedIndex >= want
		})
	}
}
