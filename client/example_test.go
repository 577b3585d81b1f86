package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/tenure-io/tenure/client"
)

// These examples talk to a running cluster (make run; TENURE_HTTP_ADDR), so
// they are compiled but not run by go test. test/integration runs the same
// flows against three real servers: TestFencedWriteRejectsPausedHolder,
// TestElectionSingleLeaderOnConcurrentStart and the other election tests.

// frameStore stands for the service that keeps what trackers write (a
// database table, an object store). Its Write is conditional on the
// fencing token, atomically with the write: it keeps the highest token
// seen per key and refuses anything below it. This check, not the lease,
// is what makes a paused holder's late write harmless.
type frameStore struct {
	mu      sync.Mutex
	highest map[string]uint64
	frames  map[string]int
}

func newFrameStore() *frameStore {
	return &frameStore{highest: map[string]uint64{}, frames: map[string]int{}}
}

// Read returns the last frame processed for scene.
func (s *frameStore) Read(scene string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.frames[scene]
}

// Write records frame for scene, fenced with token.
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

// newTracker is one tracker process's client: its own holder identity.
func newTracker(name string) *client.Client {
	cfg := client.DefaultConfig() // addresses from TENURE_HTTP_ADDR
	cfg.Holder = name + "-" + strconv.Itoa(os.Getpid())
	c, err := client.New(cfg)
	if err != nil {
		log.Fatal(err)
	}
	return c
}

// A tracker owns scene-01 and does a fenced read-modify-write. It is paused
// (a long GC, a VM migration) past its lease; meanwhile the lease is taken
// from it and another tracker takes the scene over. When the first one
// wakes up and finishes its write, the store refuses it: its token is
// below the new owner's.
func Example_fencedWrite() {
	ctx := context.Background()
	store := newFrameStore()
	t0, t1 := newTracker("tracker-0"), newTracker("tracker-1")

	old, err := t0.Acquire(ctx, "scene-01", client.WithTTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	frame := store.Read("scene-01") + 1 // read and modify...

	// ... and here tracker-0 stalls. Its lease ends without it noticing:
	// here an operator revokes it; a pause longer than the TTL ends the
	// same way. tracker-1, waiting for the scene, is granted it at once.
	if _, err := t1.Leases().Revoke(ctx, "scene-01"); err != nil {
		log.Fatal(err)
	}
	owner, err := t1.Acquire(ctx, "scene-01", client.WithTTL(10*time.Second), client.WithWait(time.Minute))
	if err != nil {
		log.Fatal(err)
	}
	if err := store.Write("scene-01", owner.Token(), store.Read("scene-01")+1); err != nil {
		log.Fatal(err)
	}

	// tracker-0 wakes up and writes: refused by the store.
	err = store.Write("scene-01", old.Token(), frame)
	fmt.Println("late write:", err != nil)

	// A service that cannot make its writes conditional can still refuse
	// stale writers at its door (best effort; see FenceValidator).
	v := client.NewFenceValidator(t1)
	fmt.Println("stale token:", errors.Is(v.Check(ctx, "scene-01", old.Token()), client.ErrStaleToken))
	fmt.Println("owner's token:", v.Check(ctx, "scene-01", owner.Token()) == nil)

	// tracker-0's lease context ends at its next renewal.
	<-old.Done()
	fmt.Println("tracker-0 lost scene-01:", errors.Is(old.Err(), client.ErrLeaseLost))
	owner.Release(ctx)
}

// A tracker owns a scene while it holds the lease: the work runs under the
// lease's context, which ends the moment the lease is lost, and every
// write carries the fencing token.
func ExampleClient_Acquire() {
	c := newTracker("tracker-0")
	store := newFrameStore()
	ctx := context.Background()

	// Wait up to a minute for the scene if another tracker has it.
	lease, err := c.Acquire(ctx, "scene-01",
		client.WithTTL(10*time.Second),
		client.WithWait(time.Minute),
		client.WithMetadata(map[string]string{"zone": "a"}))
	if errors.Is(err, client.ErrHeld) {
		log.Print("scene-01 stayed busy")
		return
	}
	if err != nil {
		log.Fatal(err)
	}
	defer lease.Release(context.Background()) // hand the scene back at once

	work := lease.Context()
	for frame := store.Read("scene-01") + 1; work.Err() == nil; frame++ {
		if err := store.Write("scene-01", lease.Token(), frame); err != nil {
			log.Print(err) // superseded: stop
			return
		}
		select {
		case <-work.Done():
		case <-time.After(40 * time.Millisecond):
		}
	}
	log.Printf("stopped tracking scene-01: %v", lease.Err())
}

// The scheduler runs in several replicas; one leads and schedules, the
// others stand by. Run campaigns, calls OnStartedLeading when elected, and
// on shutdown (SIGTERM) cancels it, waits for it, and resigns so a standby
// takes over at once rather than after the TTL.
func ExampleElection_Run() {
	c := newTracker("scheduler")
	e := c.Election("scheduler",
		client.WithTTL(15*time.Second),
		client.WithMetadata(map[string]string{"addr": "10.0.0.7:8080"}))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := e.Run(ctx, client.RunConfig{
		OnStartedLeading: func(ctx context.Context) {
			// Place instances until ctx ends (lost leadership, or shutdown),
			// fencing each placement written with the leadership's token.
			token := client.LeadershipFromContext(ctx).Token()
			log.Printf("scheduling with fencing token %d", token)
			<-ctx.Done()
		},
		OnNewLeader: func(identity string) { log.Printf("scheduler leader: %s", identity) },
	})
	if err != nil {
		log.Fatal(err)
	}
}

// The submission manager elects one executor. Only the leader dequeues and
// executes attempts, it checks its leadership before each one, and every
// state change it writes carries the leadership's token.
func ExampleElection_Campaign() {
	c := newTracker("submission-manager")
	e := c.Election("submission-manager-executor", client.WithTTL(10*time.Second))
	ctx := context.Background()

	lead, err := e.Campaign(ctx) // blocks while another instance leads
	if err != nil {
		log.Fatal(err)
	}
	defer lead.Resign(context.Background())
	for lead.Err() == nil {
		// dequeue an attempt; before executing it, and with every write:
		// UPDATE ... WHERE lease_epoch <= @token, with @token = lead.Token()
		select {
		case <-lead.Done():
		case <-time.After(time.Second):
		}
	}
	log.Printf("executor stopped: %v", lead.Err())
}

// A follower learns of each new leader through a blocking query, without
// polling.
func ExampleElection_Observe() {
	c := newTracker("dashboard")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for leader := range c.Election("scheduler").Observe(ctx) {
		if !leader.OK {
			log.Print("no scheduler leader")
			continue
		}
		log.Printf("scheduler leader %s at %s (token %d)", leader.Holder, leader.Metadata["addr"], leader.Token)
	}
}

// A cache follows every change of the leases under a prefix: it lists
// them, then watches from the list's index. When it falls behind a
// server's history it lists again and watches from the oldest index that
// server still serves: the new list already reflects everything up to it.
func ExampleEventsAPI_Watch() {
	c := newTracker("cache")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var oldest uint64
	for ctx.Err() == nil {
		leases, meta, err := c.Leases().List(ctx, &client.ListOptions{Prefix: "scenes/"}, nil)
		if err != nil {
			log.Printf("list: %v", err)
			return
		}
		log.Printf("%d leases at index %d", len(leases), meta.Index)
		for resp := range c.Events().Watch(ctx, max(meta.Index, oldest), client.EventFilter{Prefix: "scenes/"}) {
			var gone *client.APIError
			if errors.Is(resp.Err, client.ErrCompacted) && errors.As(resp.Err, &gone) {
				oldest = gone.OldestIndex // missed events: list again
				break
			} else if resp.Err != nil {
				log.Printf("watch: %v", resp.Err)
				return
			}
			for _, ev := range resp.Events {
				log.Printf("%d %s %s holder %s token %d", ev.Index, ev.Type, ev.Key, ev.Holder, ev.Token)
			}
		}
	}
}
