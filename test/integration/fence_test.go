package integration

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
)

// frameStore is the service trackers write to, as in the client's
// Example_fencedWrite: its Write is conditional on the fencing token,
// atomically with the write.
type frameStore struct {
	mu      sync.Mutex
	highest map[string]uint64
	frames  map[string]int
}

func (s *frameStore) Read(scene string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.frames[scene]
}

func (s *frameStore) Write(scene string, token uint64, frame int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest[scene] {
		return fmt.Errorf("write of frame %d to %s refused: token %d is below %d", frame, scene, token, s.highest[scene])
	}
	s.highest[scene] = token
	s.frames[scene] = frame
	return nil
}

// TestFencedWriteRejectsPausedHolder is Example_fencedWrite against three
// real servers: tracker-0 reads scene-01's frame and stalls before its
// write; its lease is revoked by force and tracker-1, waiting for the scene, takes
// it over and writes. tracker-0's late write is refused by the store, and
// a FenceValidator refuses its token while accepting tracker-1's;
// tracker-0's lease context ends at its next renewal.
func TestFencedWriteRejectsPausedHolder(t *testing.T) {
	c := startCluster(t, 3)
	ctx := context.Background()
	store := &frameStore{highest: map[string]uint64{}, frames: map[string]int{}}
	t0, t1 := c.newClient(t, "tracker-0"), c.newClient(t, "tracker-1")

	old, err := t0.Acquire(ctx, "scene-01", client.WithTTL(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Write("scene-01", old.Token(), store.Read("scene-01")+1); err != nil {
		t.Fatalf("tracker-0's write while it holds the scene: %v", err)
	}
	frame := store.Read("scene-01") + 1 // read and modify; then tracker-0 stalls

	type granted struct {
		l   *client.Lease
		err error
	}
	next := make(chan granted, 1)
	go func() {
		l, err := t1.Acquire(ctx, "scene-01", client.WithTTL(3*time.Second), client.WithWait(time.Minute))
		next <- granted{l, err}
	}()
	c.waitForWaiters(t, 1)
	// An operator who takes the stalled tracker for dead frees the scene at
	// once (force): only fencing keeps tracker-0 out now.
	if _, _, err := t1.Leases().RevokeKey(ctx, "scene-01", client.WithForce()); err != nil {
		t.Fatal(err)
	}
	g := <-next
	if g.err != nil {
		t.Fatalf("tracker-1: %v", g.err)
	}
	owner := g.l
	defer owner.Release(ctx)
	if owner.Token() <= old.Token() {
		t.Fatalf("tracker-1's token %d is not above tracker-0's %d", owner.Token(), old.Token())
	}
	if err := store.Write("scene-01", owner.Token(), store.Read("scene-01")+1); err != nil {
		t.Fatalf("tracker-1's write: %v", err)
	}

	// tracker-0 wakes up and writes.
	if err := store.Write("scene-01", old.Token(), frame); err == nil {
		t.Errorf("the store took tracker-0's late write with token %d after token %d", old.Token(), owner.Token())
	}
	if got, want := store.Read("scene-01"), 2; got != want {
		t.Errorf("frame %d in the store, want %d: tracker-1's write", got, want)
	}
	v := client.NewFenceValidator(t1)
	if err := v.Check(ctx, "scene-01", old.Token()); !errors.Is(err, client.ErrStaleToken) {
		t.Errorf("Check of tracker-0's token = %v, want ErrStaleToken", err)
	}
	if err := v.Check(ctx, "scene-01", owner.Token()); err != nil {
		t.Errorf("Check of tracker-1's token = %v, want nil", err)
	}
	select {
	case <-old.Done():
	case <-time.After(3 * time.Second):
		t.Fatalf("tracker-0's lease context did not end after the revoke")
	}
	if !errors.Is(old.Err(), client.ErrLeaseLost) {
		t.Errorf("tracker-0: Err = %v, want ErrLeaseLost", old.Err())
	}
}
