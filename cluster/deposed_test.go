package cluster_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// Guarantee: a leader cut off from its peers never acknowledges a renewal, a
// linearizable read or an acquisition once it is cut off (and so none after
// a new leader exists), and the expiry it may decide for a lease the new
// leader is renewing never takes effect.
func TestDeposedLeaderNeverAcknowledges(t *testing.T) {
	const ttl = 400 * time.Millisecond
	c := inproc.Start(t, 3, inproc.Options{})
	l := acquire(t, c, "partitions/17", "worker-a", ttl)
	old := c.Leader()
	oldNode := c.Node(old)

	c.Isolate(old)
	var (
		stop  atomic.Bool
		wg    sync.WaitGroup
		mu    sync.Mutex
		acked []string
	)
	hammer := func(name string, op func() error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				if err := op(); err == nil {
					mu.Lock()
					acked = append(acked, name)
					mu.Unlock()
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	hammer("renew", func() error {
		_, err := oldNode.Renew(harness.Context(t, ttl), l.Key, l.Holder, testSecret, l.Token)
		return err
	})
	hammer("read", func() error {
		_, err := oldNode.Get(harness.Context(t, ttl), l.Key, cluster.Linearizable)
		return err
	})
	hammer("acquire", func() error {
		_, _, err := oldNode.Acquire(harness.Context(t, ttl), cluster.AcquireRequest{Secret: testSecret, Key: "other", Holder: "x", TTL: ttl})
		return err
	})

	// The majority elects a new leader; the holder renews there from now
	// to the end of the test.
	now := c.Leader(old)
	renewErr := make(chan error, 1)
	stopRenew := make(chan struct{})
	go func() {
		for {
			if _, err := c.Node(now).Renew(harness.Context(t, ttl), l.Key, l.Holder, testSecret, l.Token); err != nil {
				renewErr <- err
				return
			}
			select {
			case <-stopRenew:
				renewErr <- nil
				return
			case <-time.After(ttl / 4):
			}
		}
	}()
	time.Sleep(4 * ttl)
	stop.Store(true)
	wg.Wait()
	if len(acked) > 0 {
		t.Fatalf("the cut-off leader acknowledged %v", acked)
	}

	// Heal: whatever the old leader proposed while cut off is discarded.
	c.Heal(old)
	harness.WaitUntil(t, 5*time.Second, "the old leader to catch up", func() bool {
		a, _, _ := cluster.MachineOf(c.Node(old)).Indexes()
		b, _, _ := cluster.MachineOf(c.Node(now)).Indexes()
		return a == b
	})
	time.Sleep(2 * ttl)
	close(stopRenew)
	if err := <-renewErr; err != nil {
		t.Fatalf("renew on the new leader: %v", err)
	}
	for j := 0; j < 3; j++ {
		got := cluster.MachineOf(c.Node(j)).Get(l.Key)
		if !got.Held || got.Token != l.Token {
			t.Fatalf("node %d after heal: %+v, want held under token %d", j, got, l.Token)
		}
	}
	if _, err := oldNode.Renew(harness.Context(t, ttl), l.Key, l.Holder, testSecret, l.Token); !errors.Is(err, cluster.ErrNotLeader) {
		t.Fatalf("renew on the old leader after heal: %v, want ErrNotLeader", err)
	}
}
