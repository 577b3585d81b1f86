package client

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"
)

// newCandidate returns a client of f with its own holder, as another
// process would have.
func newCandidate(t *testing.T, f *fakeTenure, holder string) *Client {
	t.Helper()
	c := newLeaseClient(t, f.URL)
	c.cfg.Holder = holder
	return c
}

// next receives from ch, failing t after timeout.
func next(t *testing.T, ch <-chan LeaderInfo, timeout time.Duration) LeaderInfo {
	t.Helper()
	select {
	case info, ok := <-ch:
		if !ok {
			t.Fatalf("Observe closed its channel")
		}
		return info
	case <-time.After(timeout):
		t.Fatalf("Observe reported nothing within %v", timeout)
	}
	return LeaderInfo{}
}

func TestElectionKey(t *testing.T) {
	tests := []struct{ name, want string }{
		{"scheduler", "elections/scheduler"},
		{"submission-manager-executor", "elections/submission-manager-executor"},
		{"ccm/scheduler/leader", "ccm/scheduler/leader"},
	}
	for _, tt := range tests {
		if got := ElectionKey(tt.name); got != tt.want {
			t.Errorf("ElectionKey(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestCampaignWaitsAndResignHandsOver(t *testing.T) {
	f := newFakeTenure(t)
	ctx := context.Background()
	a := newCandidate(t, f, "sm-01").Election("submission-manager-executor", WithTTL(900*time.Millisecond),
		WithMetadata(map[string]string{"addr": "10.0.0.1:8080"}))
	b := newCandidate(t, f, "sm-02").Election("submission-manager-executor", WithTTL(900*time.Millisecond))

	la, err := a.Campaign(ctx)
	if err != nil {
		t.Fatalf("a.Campaign: %v", err)
	}
	info, err := b.Leader(ctx)
	if err != nil {
		t.Fatalf("Leader: %v", err)
	}
	if !info.OK || info.Holder != "sm-01" || info.Token != la.Token() || info.Metadata["addr"] != "10.0.0.1:8080" {
		t.Errorf("Leader = %+v, want sm-01 with token %d and its address", info, la.Token())
	}

	type result struct {
		l   *Leadership
		err error
	}
	got := make(chan result, 1)
	go func() {
		l, err := b.Campaign(ctx)
		got <- result{l, err}
	}()
	// b waits while a leads (a renews meanwhile).
	select {
	case r := <-got:
		t.Fatalf("b's Campaign returned while a leads: %+v", r)
	case <-time.After(time.Second):
	}
	if err := a.Resign(ctx); err != nil {
		t.Fatalf("Resign: %v", err)
	}
	if !errors.Is(la.Err(), ErrReleased) {
		t.Errorf("a's leadership: Err = %v, want ErrReleased", la.Err())
	}
	var r result
	select {
	case r = <-got:
	case <-time.After(2 * time.Second):
		t.Fatalf("b did not lead within 2s of a's resignation")
	}
	if r.err != nil {
		t.Fatalf("b.Campaign: %v", r.err)
	}
	if r.l.Token() <= la.Token() {
		t.Errorf("b's token %d is not above a's %d", r.l.Token(), la.Token())
	}
	if err := a.Resign(ctx); err != nil {
		t.Errorf("a.Resign again: %v, want nil", err)
	}
	r.l.Resign(ctx)
}

func TestCampaignEndsWithContext(t *testing.T) {
	f := newFakeTenure(t)
	a := newCandidate(t, f, "a").Election("scheduler", WithTTL(900*time.Millisecond))
	la, err := a.Campaign(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer la.Resign(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err = newCandidate(t, f, "b").Election("scheduler").Campaign(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Campaign = %v, want the context's deadline", err)
	}
}

func TestObserveFollowsWithBlockingQueries(t *testing.T) {
	f := newFakeTenure(t)
	ctx, cancel := context.WithCancel(context.Background())
	observer := newCandidate(t, f, "observer").Election("scheduler")
	ch := observer.Observe(ctx)

	if info := next(t, ch, 2*time.Second); info.OK {
		t.Fatalf("first report = %+v, want no leader (never elected)", info)
	}
	a := newCandidate(t, f, "sched-a").Election("scheduler", WithTTL(900*time.Millisecond))
	la, err := a.Campaign(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info := next(t, ch, 2*time.Second); !info.OK || info.Holder != "sched-a" || info.Token != la.Token() {
		t.Fatalf("report = %+v, want sched-a with token %d", info, la.Token())
	}

	// While nothing changes (a renews, which changes no index), Observe
	// sends nothing new: its one request is blocked on the server.
	gets := func() []seenRequest {
		var out []seenRequest
		for _, r := range f.requests() {
			if r.Method == http.MethodGet {
				out = append(out, r)
			}
		}
		return out
	}
	// Its next read is sent right after the report; count from a renewal
	// later.
	renewals := len(f.renewRequests())
	waitUntil(t, 3*time.Second, "a renewal", func() bool { return len(f.renewRequests()) >= renewals+1 })
	before := len(gets())
	waitUntil(t, 3*time.Second, "three more renewals", func() bool { return len(f.renewRequests()) >= renewals+4 })
	if n := len(gets()) - before; n != 0 {
		t.Errorf("Observe sent %d requests while nothing changed, want none", n)
	}

	if err := la.Resign(ctx); err != nil {
		t.Fatal(err)
	}
	if info := next(t, ch, 2*time.Second); info.OK || info.Token != la.Token() {
		t.Fatalf("report = %+v, want no leader, last token %d", info, la.Token())
	}
	for i, r := range gets()[1:] {
		if r.Query.Get("index") == "" {
			t.Errorf("read %d of Observe had no index: %v", i+2, r.Query)
		}
	}
	cancel()
	select {
	case _, ok := <-ch:
		if ok {
			t.Errorf("Observe reported after its context ended")
		}
	case <-time.After(2 * time.Second):
		t.Errorf("Observe's channel not closed after its context ended")
	}
}

func TestRunWorksOnlyWhileLeadingAndReleasesAfterWork(t *testing.T) {
	f := newFakeTenure(t)
	c := newCandidate(t, f, "sm-01")
	e := c.Election("submission-manager-executor", WithTTL(900*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())

	var (
		mu           sync.Mutex
		events       []string
		heldAtStart  bool
		workReturned time.Time
	)
	note := func(s string) {
		mu.Lock()
		events = append(events, s)
		mu.Unlock()
	}
	started := make(chan struct{})
	observed := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- e.Run(ctx, RunConfig{
			OnStartedLeading: func(work context.Context) {
				l := f.lease(e.Key())
				lead := LeadershipFromContext(work)
				mu.Lock()
				heldAtStart = l.held && l.holder == "sm-01" && lead != nil && lead.Token() == l.token
				mu.Unlock()
				note("started")
				close(started)
				<-work.Done()
				// Still working after the cancellation: the lease must not
				// be released before this returns.
				time.Sleep(200 * time.Millisecond)
				if l := f.lease(e.Key()); !l.held {
					t.Errorf("the lease was released before OnStartedLeading returned")
				}
				mu.Lock()
				workReturned = time.Now()
				mu.Unlock()
				note("returned")
			},
			OnStoppedLeading: func() { note("stopped") },
			OnNewLeader: func(id string) {
				note("leader " + id)
				close(observed)
			},
		})
	}()
	select {
	case <-started:
	case <-time.After(3 * time.Second):
		t.Fatalf("OnStartedLeading not called")
	}
	select {
	case <-observed:
	case <-time.After(3 * time.Second):
		t.Fatalf("OnNewLeader not called")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run = %v, want nil after its context ended", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatalf("Run did not return after its context ended")
	}
	mu.Lock()
	defer mu.Unlock()
	if !heldAtStart {
		t.Errorf("OnStartedLeading ran while the server did not hold the lease for this process")
	}
	var release *seenRequest
	for _, r := range f.requests() {
		if r.Method == http.MethodDelete {
			release = &r
		}
	}
	if release == nil {
		t.Fatalf("Run did not release the lease")
	}
	if release.At.Before(workReturned) {
		t.Errorf("lease released %v before OnStartedLeading returned", workReturned.Sub(release.At))
	}
	want := map[string]bool{"started": true, "returned": true, "stopped": true, "leader sm-01": true}
	for _, ev := range events {
		delete(want, ev)
	}
	if len(want) > 0 {
		t.Errorf("events %v lack %v", events, want)
	}
	// "stopped" comes after "returned".
	var ret, stop int
	for i, ev := range events {
		switch ev {
		case "returned":
			ret = i
		case "stopped":
			stop = i
		}
	}
	if stop < ret {
		t.Errorf("OnStoppedLeading before OnStartedLeading returned: %v", events)
	}
}

func TestRunReportsEachTermOfTheSameLeader(t *testing.T) {
	f := newFakeTenure(t)
	c := newCandidate(t, f, "sm-01")
	e := c.Election("submission-manager-executor", WithTTL(900*time.Millisecond))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var (
		mu      sync.Mutex
		leaders []string
		tokens  []uint64
	)
	reported := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(leaders)
	}
	firstReported := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- e.Run(ctx, RunConfig{
			OnStartedLeading: func(work context.Context) {
				mu.Lock()
				tokens = append(tokens, LeadershipFromContext(work).Token())
				term := len(tokens)
				mu.Unlock()
				if term == 1 {
					// Return while leading once the term was reported (or
					// the test fails waiting for it): Run resigns and,
					// alone, is elected again with a new token.
					select {
					case <-firstReported:
					case <-time.After(3 * time.Second):
					}
					return
				}
				<-work.Done()
			},
			OnNewLeader: func(id string) {
				mu.Lock()
				leaders = append(leaders, id)
				if len(leaders) == 1 {
					close(firstReported)
				}
				mu.Unlock()
			},
		})
	}()
	// OnNewLeader runs on the observer's goroutine: it may report the
	// second term before Run has called OnStartedLeading for it.
	started := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(tokens)
	}
	waitUntil(t, 5*time.Second, "the second term of sm-01 to start and be reported", func() bool { return reported() >= 2 && started() >= 2 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(tokens) < 2 || tokens[1] <= tokens[0] {
		t.Fatalf("terms with tokens %v, want two, the second above the first", tokens)
	}
	if want := []string{"sm-01", "sm-01"}; !slices.Equal(leaders, want) {
		t.Errorf("OnNewLeader got %q, want %q: one call per term", leaders, want)
	}
}

func TestRunNeedsWork(t *testing.T) {
	c, _ := newTestClient(t, "127.0.0.1:1")
	if err := c.Election("x").Run(context.Background(), RunConfig{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("Run without OnStartedLeading = %v, want ErrInvalid", err)
	}
}
