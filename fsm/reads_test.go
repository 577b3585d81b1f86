package fsm

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"
)

// TestIndexes checks the indexes that reads report: the applied index moves
// with every entry, the lease index only with entries that change a lease.
func TestIndexes(t *testing.T) {
	n := newNode(t)
	steps := []struct {
		term              uint64
		cmd               Command
		applied, leaseIdx uint64
	}{
		{1, acquire("a", "w1"), 1, 1},
		{1, acquire("a", "w2"), 2, 1},
		{2, LeaderEstablished{Term: 2}, 3, 1},
		{2, acquire("a", "w1"), 4, 4},
		{3, Revoke{Key: "zzz"}, 5, 4},
		{3, Revoke{Key: "a"}, 6, 6},
	}
	for _, s := range steps {
		n.term = s.term
		n.applyRaw(Encode(s.cmd))
		applied, term, lease := n.m.Indexes()
		if applied != s.applied || term != s.term || lease != s.leaseIdx {
			t.Errorf("after %T at index %d: Indexes() = %d, %d, %d; want %d, %d, %d",
				s.cmd, n.index, applied, term, lease, s.applied, s.term, s.leaseIdx)
		}
		if _, listIdx := n.m.List(Filter{}); listIdx != s.leaseIdx {
			t.Errorf("after %T at index %d: List index = %d, want %d", s.cmd, n.index, listIdx, s.leaseIdx)
		}
	}
}

// TestList checks the filters of GET /v1/leases and its key order.
func TestList(t *testing.T) {
	n := newNode(t)
	n.all(
		acquire("partitions/2", "w1"),
		acquire("partitions/10", "w2"),
		acquire("partitions/1", "w1"),
		acquire("scene-01", "w2"),
		acquire("elections/scheduler", "w1"),
		Release{Key: "partitions/10", Holder: "w2", Token: 2},
		Revoke{Key: "elections/scheduler"},
		acquire("scene-02", "w3"),
		acquire("scene-01", "w3"), // held by w2: refused
	)
	tests := []struct {
		name   string
		filter Filter
		want   []string
	}{
		{name: "everything, ordered by key", filter: Filter{}, want: []string{"elections/scheduler", "partitions/1", "partitions/10", "partitions/2", "scene-01", "scene-02"}},
		{name: "prefix", filter: Filter{Prefix: "partitions/"}, want: []string{"partitions/1", "partitions/10", "partitions/2"}},
		{name: "prefix that is a whole key", filter: Filter{Prefix: "partitions/1"}, want: []string{"partitions/1", "partitions/10"}},
		{name: "held", filter: Filter{State: "held"}, want: []string{"partitions/1", "partitions/2", "scene-01", "scene-02"}},
		{name: "free keeps their last holder", filter: Filter{State: "free", Holder: "w1"}, want: []string{"elections/scheduler"}},
		{name: "free", filter: Filter{State: "free"}, want: []string{"elections/scheduler", "partitions/10"}},
		{name: "holder", filter: Filter{Holder: "w2"}, want: []string{"partitions/10", "scene-01"}},
		{name: "held by holder under prefix", filter: Filter{Prefix: "partitions/", State: "held", Holder: "w1"}, want: []string{"partitions/1", "partitions/2"}},
		{name: "no match", filter: Filter{Prefix: "nope"}, want: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			leases, index := n.m.List(tt.filter)
			got := make([]string, len(leases))
			for i, l := range leases {
				got[i] = l.Key
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("List(%+v) = %q, want %q", tt.filter, got, tt.want)
			}
			if index != 8 {
				t.Errorf("List index = %d, want 8 (the last entry that changed a lease)", index)
			}
		})
	}

	var held []string
	for _, l := range n.m.Held() {
		held = append(held, l.Key)
	}
	if want := []string{"partitions/1", "partitions/2", "scene-01", "scene-02"}; !reflect.DeepEqual(held, want) {
		t.Errorf("Held() = %q, want %q", held, want)
	}
}

// TestLeasesHandedOutAreNotModified: callers (the HTTP layer, a snapshot in
// progress) may keep the *Lease values they read while Apply goes on.
func TestLeasesHandedOutAreNotModified(t *testing.T) {
	n := newNode(t)
	granted := n.one(Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: map[string]string{"v": "1"}, Time: wall}).Lease
	read := n.m.Get("a")
	want := *read

	n.one(Acquire{Key: "a", Holder: "w1", TTL: time.Hour, Metadata: map[string]string{"v": "2"}, Time: wall})
	n.one(Release{Key: "a", Holder: "w1", Token: 1})
	n.one(acquire("a", "w2"))

	for name, l := range map[string]*Lease{"the granted result": granted, "Get before the changes": read} {
		if !reflect.DeepEqual(*l, want) {
			t.Errorf("%s changed under the caller:\n  %s\nwant\n  %s", name, leaseString(l), leaseString(&want))
		}
	}
}

// TestConcurrentReads runs the read methods on other goroutines while
// entries are applied and snapshots persisted, as the HTTP layer and Raft
// do; run it with -race. Every List is ordered and its index never goes
// backwards.
func TestConcurrentReads(t *testing.T) {
	n := newNode(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var last, lastGroup uint64
			for {
				select {
				case <-stop:
					return
				case <-n.m.Changed():
				default:
				}
				leases, index := n.m.List(Filter{Prefix: "k"})
				if index < last {
					errs <- fmt.Errorf("list index went back from %d to %d", last, index)
					return
				}
				last = index
				for i := 1; i < len(leases); i++ {
					if leases[i-1].Key >= leases[i].Key {
						errs <- fmt.Errorf("list out of order: %q before %q", leases[i-1].Key, leases[i].Key)
						return
					}
				}
				_ = n.m.Get("k7")
				_ = n.m.Held()
				n.m.Indexes()
				n.m.LastToken()
				n.m.EstablishedTerm()

				groups, gi := n.m.Groups()
				if gi < lastGroup {
					errs <- fmt.Errorf("group index went back from %d to %d", lastGroup, gi)
					return
				}
				lastGroup = gi
				for _, g := range groups { // read what Apply must not write
					for range g.Assignment {
					}
					_ = append([]string(nil), g.Keys...)
				}
				_ = n.m.Group("g")
				_ = n.m.Control("k3").Prohibits("w1")
				_ = n.m.Drained("w2")
				_ = n.m.DrainedWorkers()
				_ = n.m.GroupIndex()
			}
		}()
	}
	t.Cleanup(func() {
		close(stop)
		wg.Wait()
	})

	n.one(GroupPut{Name: "g", Keys: []string{"k1", "k2", "k3"}})
	for i := 0; i < 2000; i++ {
		key := fmt.Sprintf("k%d", i%37)
		if i%7 == 0 {
			w := fmt.Sprintf("w%d", i%3)
			n.batch(
				Assign{Group: "g", Assignment: map[string]string{"k1": w, "k2": w, key: w}},
				GroupKeys{Name: "g", Add: []string{key}, Remove: []string{fmt.Sprintf("k%d", (i+1)%37)}},
				SetKeyControl{Key: "k3", Control: KeyControl{Prohibited: []string{w}}},
				WorkerDrain{Worker: w, Draining: i%2 == 0},
			)
		}
		r := n.one(acquire(key, fmt.Sprintf("w%d", i%3)))
		if i%5 == 0 {
			snap, err := n.m.Snapshot()
			if err != nil {
				t.Fatalf("Snapshot: %v", err)
			}
			done := make(chan error, 1)
			go func() { done <- snap.Persist(&fakeSink{}) }() // concurrent with the next Apply, as in Raft
			n.one(Revoke{Key: key})
			if err := <-done; err != nil {
				t.Fatalf("Persist: %v", err)
			}
			snap.Release()
		} else if r.Code == Granted || r.Code == Kept {
			n.one(Release{Key: key, Holder: r.Lease.Holder, Token: r.Lease.Token})
		}
	}
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}
