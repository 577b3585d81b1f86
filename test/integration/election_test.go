package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
)

// The behaviours a leader lease must show, each tested against three real
// servers with the Go client's Election (the process-kill failover is
// TestElectCommandFailover, with `tenure elect` processes):
//
//  1. a single leader on concurrent start: TestElectionSingleLeaderOnConcurrentStart
//  2. failover after the leader's process is killed: TestElectCommandFailover
//  3. no work without leadership: TestElectionNoWorkWithoutLeadership
//  4. work stops at once when leadership is lost:
//     TestElectionWorkStopsAtTheNextRenewalWhenRevoked and
//     TestElectionCutOffLeaderStopsBeforeTheNextIsElected
//  5. a follower hears of a new leader without polling:
//     TestElectionObserveIsABlockingQuery

// term is one leadership as a candidate saw it: from Campaign's return to
// the moment it stopped working.
type term struct {
	holder     string
	token      uint64
	start, end time.Time
}

// TestElectionSingleLeaderOnConcurrentStart: five candidates, each with its
// own client as five processes would have, campaign at the same instant
// and keep campaigning again after each term (lead 150ms, resign). At no
// moment do two lead: a shared counter of candidates that lead never
// exceeds one, their terms never overlap, and the fencing tokens of
// successive terms strictly increase. The line is FIFO, so every candidate
// leads in turn.
func TestElectionSingleLeaderOnConcurrentStart(t *testing.T) {
	c := startCluster(t, 3)
	const candidates, terms = 5, 12
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var (
		leading   atomic.Int32
		maxSeen   atomic.Int32
		mu        sync.Mutex
		history   []term
		failures  []string
		wg        sync.WaitGroup
		startLine = make(chan struct{})
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		failures = append(failures, fmt.Sprintf(format, args...))
		mu.Unlock()
	}
	for i := range candidates {
		holder := fmt.Sprintf("scheduler-%d", i)
		e := c.newClient(t, holder).Election("scheduler", client.WithTTL(2*time.Second))
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-startLine
			for {
				lead, err := e.Campaign(ctx)
				if err != nil {
					if ctx.Err() == nil {
						fail("%s: Campaign: %v", holder, err)
					}
					return
				}
				start := time.Now()
				n := leading.Add(1)
				for {
					m := maxSeen.Load()
					if n <= m || maxSeen.CompareAndSwap(m, n) {
						break
					}
				}
				select {
				case <-lead.Done():
					fail("%s lost its leadership while working: %v", holder, lead.Err())
				case <-time.After(150 * time.Millisecond):
				}
				leading.Add(-1) // stop working, then resign
				end := time.Now()
				mu.Lock()
				history = append(history, term{holder, lead.Token(), start, end})
				done := len(history) >= terms
				mu.Unlock()
				if err := lead.Resign(context.Background()); err != nil {
					fail("%s: Resign: %v", holder, err)
				}
				if done {
					cancel()
					return
				}
			}
		}()
	}
	close(startLine)
	waited := make(chan struct{})
	go func() {
		wg.Wait()
		close(waited)
	}()
	select {
	case <-waited:
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatalf("%d terms not reached within 60s", terms)
	}

	mu.Lock()
	defer mu.Unlock()
	for _, f := range failures {
		t.Error(f)
	}
	if m := maxSeen.Load(); m != 1 {
		t.Errorf("%d candidates led at once, want at most 1", m)
	}
	sort.Slice(history, func(i, j int) bool { return history[i].start.Before(history[j].start) })
	led := map[string]int{}
	var gaps []time.Duration
	for i, tm := range history {
		led[tm.holder]++
		if i == 0 {
			continue
		}
		prev := history[i-1]
		if tm.start.Before(prev.end) {
			t.Errorf("%s (token %d) started leading %v before %s (token %d) stopped", tm.holder, tm.token, prev.end.Sub(tm.start), prev.holder, prev.token)
		}
		if tm.token <= prev.token {
			t.Errorf("token %d of %s is not above token %d of the term before", tm.token, tm.holder, prev.token)
		}
		gaps = append(gaps, tm.start.Sub(prev.end))
	}
	if len(led) != candidates {
		t.Errorf("terms by candidate %v: want every one of the %d candidates to lead (the line is FIFO)", led, candidates)
	}
	slices.Sort(gaps)
	if len(gaps) > 0 {
		t.Logf("%d terms; hand-over from one leader's resignation to the next leader's start: median %v, max %v",
			len(history), gaps[len(gaps)/2].Round(time.Microsecond), gaps[len(gaps)-1].Round(time.Microsecond))
	}
}

// workLog records the work steps of candidates, and checks each one
// against the cluster: a step may happen only while the cluster says the
// candidate holds the election's key under its leadership's token.
type workLog struct {
	mu     sync.Mutex
	steps  map[string][]time.Time
	starts map[string]int
	bad    []string
}

func (w *workLog) step(holder string, at time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.steps[holder] = append(w.steps[holder], at)
}

func (w *workLog) violation(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.bad = append(w.bad, fmt.Sprintf(format, args...))
}

func (w *workLog) count(holder string) (starts, steps int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.starts[holder], len(w.steps[holder])
}

// TestElectionNoWorkWithoutLeadership: the executor of a submission
// manager runs under Election.Run. Its work function is called only once
// it leads: at the start and at every step the cluster (a linearizable
// read) says it holds the key under the token Run gave it. A second
// instance, blocked behind the leader, never calls its work function; it
// starts only after the first stopped working and resigned, and then does
// its own steps, never interleaved with the first's.
func TestElectionNoWorkWithoutLeadership(t *testing.T) {
	c := startCluster(t, 3)
	const ttl = 2 * time.Second
	checker := c.newClient(t, "checker").Election("submission-manager-executor")
	w := &workLog{steps: map[string][]time.Time{}, starts: map[string]int{}}

	work := func(holder string) func(ctx context.Context) {
		return func(ctx context.Context) {
			lead := client.LeadershipFromContext(ctx)
			w.mu.Lock()
			w.starts[holder]++
			w.mu.Unlock()
			for ctx.Err() == nil {
				info, err := checker.Leader(context.Background())
				switch {
				case err != nil:
					w.violation("%s: reading the leader: %v", holder, err)
				case ctx.Err() != nil:
					return // leadership ended during the read: no step
				case !info.OK || info.Holder != holder || info.Token != lead.Token():
					w.violation("%s worked while the cluster says the leader is %+v (its token %d)", holder, info, lead.Token())
				}
				w.step(holder, time.Now())
				select {
				case <-ctx.Done():
				case <-time.After(50 * time.Millisecond):
				}
			}
		}
	}
	run := func(ctx context.Context, holder string) <-chan error {
		e := c.newClient(t, holder).Election("submission-manager-executor", client.WithTTL(ttl))
		done := make(chan error, 1)
		go func() { done <- e.Run(ctx, client.RunConfig{OnStartedLeading: work(holder)}) }()
		return done
	}

	ctxA, stopA := context.WithCancel(context.Background())
	defer stopA()
	doneA := run(ctxA, "sm-01")
	poll.WaitFor(t, 10*time.Second, func() error {
		if _, steps := w.count("sm-01"); steps < 2 {
			return fmt.Errorf("sm-01 did %d steps, want 2", steps)
		}
		return nil
	})
	ctxB, stopB := context.WithCancel(context.Background())
	defer stopB()
	doneB := run(ctxB, "sm-02")

	// For two TTLs, sm-02 waits in line and does nothing.
	poll.Holds(t, 2*ttl, func() error {
		if starts, steps := w.count("sm-02"); starts+steps > 0 {
			return fmt.Errorf("sm-02 started %d times and did %d steps while sm-01 leads", starts, steps)
		}
		return nil
	})

	stopA()
	if err := <-doneA; err != nil {
		t.Fatalf("sm-01's Run: %v", err)
	}
	poll.WaitFor(t, 10*time.Second, func() error {
		if _, steps := w.count("sm-02"); steps < 2 {
			return fmt.Errorf("sm-02 did %d steps after sm-01 stopped, want 2", steps)
		}
		return nil
	})
	stopB()
	if err := <-doneB; err != nil {
		t.Fatalf("sm-02's Run: %v", err)
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	for _, v := range w.bad {
		t.Error(v)
	}
	a, b := w.steps["sm-01"], w.steps["sm-02"]
	if lastA, firstB := a[len(a)-1], b[0]; !firstB.After(lastA) {
		t.Errorf("sm-02's first step is %v before sm-01's last", lastA.Sub(firstB))
	} else {
		t.Logf("sm-01 did %d steps, sm-02 %d; from sm-01's last step to sm-02's first: %v", len(a), len(b), firstB.Sub(lastA).Round(time.Millisecond))
	}
	if w.starts["sm-01"] != 1 || w.starts["sm-02"] != 1 {
		t.Errorf("work started %v times, want once each", w.starts)
	}
}

// leaderAndWaiter makes holder lead the election name (through its own
// client, or through addrs) and a second candidate campaign behind it; it
// returns the leadership and a channel that gets the second's leadership
// and the time it began.
func leaderAndWaiter(t *testing.T, c *cluster, name string, ttl time.Duration, leaderAddrs ...string) (*client.Leadership, <-chan term) {
	t.Helper()
	lead, err := c.newClient(t, "leader", leaderAddrs...).Election(name, client.WithTTL(ttl)).Campaign(context.Background())
	if err != nil {
		t.Fatalf("Campaign: %v", err)
	}
	next := make(chan term, 1)
	ctx, cancel := context.WithCancel(context.Background())
	e := c.newClient(t, "standby").Election(name, client.WithTTL(ttl))
	done := make(chan struct{})
	go func() {
		defer close(done)
		l, err := e.Campaign(ctx)
		if err != nil {
			return
		}
		next <- term{holder: l.Holder(), token: l.Token(), start: time.Now()}
		<-ctx.Done()
		rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer rcancel()
		l.Resign(rctx)
	}()
	// The standby resigns while the cluster still runs, and is gone before
	// the test ends: a resignation still retrying after it could reach a
	// later test's server or proxy that reuses one of these ports.
	t.Cleanup(func() {
		cancel()
		<-done
	})
	c.waitForWaiters(t, 1)
	return lead, next
}

// waitForWaiters waits until the leader has n blocking acquirers in line
// (tenure_acquire_waiters).
func (c *cluster) waitForWaiters(t *testing.T, n int) {
	t.Helper()
	poll.WaitFor(t, 10*time.Second, func() error {
		l := c.leader(t)
		r, err := c.try(c.nodes[l].httpAddr, http.MethodGet, "/metrics", nil)
		if err != nil {
			return err
		}
		if got := parseMetrics(r.Body)["tenure_acquire_waiters"]; got < float64(n) {
			return fmt.Errorf("%v acquirers in line on %s, want %d", got, c.nodes[l].id, n)
		}
		return nil
	})
}

// endedAt returns a function that reports when ctx ended as seen by a
// goroutine waiting on it: never earlier than it ended.
func endedAt(ctx context.Context) func() time.Time {
	var at atomic.Pointer[time.Time]
	context.AfterFunc(ctx, func() {
		now := time.Now()
		at.Store(&now)
	})
	return func() time.Time {
		if t := at.Load(); t != nil {
			return *t
		}
		return time.Time{}
	}
}

// TestElectionWorkStopsAtTheNextRenewalWhenRevoked: an operator revokes
// the leader's lease. The leader's work context is cancelled at its next
// renewal, within TTL/3 (+10% jitter) and a bound, with ErrLeaseLost and
// reason revoked. The revoke frees the key only when the leader's deadline
// on the server passes, so the standby in line is elected after the
// revoked leader stopped: the two never work at once. The new leader's
// token is higher.
func TestElectionWorkStopsAtTheNextRenewalWhenRevoked(t *testing.T) {
	c := startCluster(t, 3)
	const ttl = 3 * time.Second
	lead, next := leaderAndWaiter(t, c, "scheduler", ttl)
	ended := endedAt(lead.Context())

	revoked := time.Now()
	if _, err := c.newClient(t, "operator").Leases().Revoke(context.Background(), lead.Key()); err != nil {
		t.Fatalf("Revoke: %v", err)
	}
	var standby term
	select {
	case standby = <-next:
	case <-time.After(ttl + 5*time.Second):
		t.Fatalf("the standby was not elected after the revoke")
	}
	if ended().IsZero() || standby.start.Before(ended()) {
		t.Fatalf("the standby was elected at %v, before the revoked leader stopped (%v)", standby.start, ended())
	}
	took := ended().Sub(revoked)
	bound := ttl/3*11/10 + time.Second
	t.Logf("revoked leader stopped %v after the revoke (renewal every %v±10%%); the standby was elected %v after it",
		took.Round(time.Millisecond), ttl/3, standby.start.Sub(revoked).Round(time.Millisecond))
	if took > bound {
		t.Errorf("the revoked leader stopped %v after the revoke, want within its next renewal (%v)", took, bound)
	}
	var ae *client.APIError
	if err := lead.Err(); !errors.Is(err, client.ErrLeaseLost) || !errors.As(err, &ae) || ae.Reason != client.ReasonRevoked {
		t.Errorf("Err = %v, want ErrLeaseLost with reason revoked", err)
	}
	if standby.token <= lead.Token() {
		t.Errorf("the new leader's token %d is not above the revoked one's %d", standby.token, lead.Token())
	}
}

// TestElectionCutOffLeaderStopsBeforeTheNextIsElected: the leader is cut
// off from the cluster (its proxy stops passing requests, as in a
// partition); its renewals hang. Its work context ends with
// ErrLeaseExpiredLocally at its local deadline, SentAt of the last
// successful renewal + TTL − margin, while its renewals are still being
// retried, and in any case before the cluster expires the lease and
// elects the standby: the two never work at the same time.
func TestElectionCutOffLeaderStopsBeforeTheNextIsElected(t *testing.T) {
	c := startCluster(t, 3)
	const ttl = 2 * time.Second // margin 200ms
	p := newProxy(t, c.nodes[c.leader(t)].httpAddr)
	lead, next := leaderAndWaiter(t, c, "scheduler", ttl, p.addr())
	ended := endedAt(lead.Context())
	poll.WaitFor(t, 5*time.Second, func() error { // a renewal or two through the proxy
		for _, r := range p.requests() {
			if r.Path == "/v1/renew" {
				return nil
			}
		}
		return errors.New("no renewal yet")
	})

	cut := time.Now()
	p.setCut(true)
	var standby term
	select {
	case standby = <-next:
	case <-time.After(3 * ttl):
		t.Fatalf("the standby was not elected within %v of the cut", 3*ttl)
	}
	if ended().IsZero() {
		t.Fatalf("the standby was elected while the cut-off leader still works")
	}
	if !errors.Is(lead.Err(), client.ErrLeaseExpiredLocally) {
		t.Errorf("Err = %v, want ErrLeaseExpiredLocally", lead.Err())
	}
	var lastOK time.Time
	for _, r := range p.requests() {
		if r.Path == "/v1/renew" && !r.Cut {
			lastOK = r.At
		}
	}
	t.Logf("cut-off leader stopped %v after the cut and %v after its last renewal arrived; the standby was elected %v after the leader stopped (TTL %v)",
		ended().Sub(cut).Round(time.Millisecond), ended().Sub(lastOK).Round(time.Millisecond), standby.start.Sub(ended()).Round(time.Millisecond), ttl)
	if !standby.start.After(ended()) {
		t.Errorf("the standby started leading %v before the cut-off leader stopped", ended().Sub(standby.start))
	}
	if got := ended().Sub(lastOK); got >= ttl {
		t.Errorf("the leader stopped %v after its last successful renewal arrived, want before TTL %v", got, ttl)
	}
	if standby.token <= lead.Token() {
		t.Errorf("the new leader's token %d is not above the old one's %d", standby.token, lead.Token())
	}
}

// TestElectionObserveIsABlockingQuery: a follower (say a dashboard, or the
// instances that forward work to the scheduler leader) observes the
// election through a proxy that counts its requests. While nothing
// changes it sends nothing: its one request, which carries index=, stays
// blocked on the server across several of the leader's renewals. When the
// leader resigns, the follower hears of the new leader quickly.
func TestElectionObserveIsABlockingQuery(t *testing.T) {
	c := startCluster(t, 3)
	const ttl = 1500 * time.Millisecond // renewals every 500ms
	p := newProxy(t, c.nodes[c.followers(c.leader(t))[0]].httpAddr)
	lead, next := leaderAndWaiter(t, c, "scheduler", ttl)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := c.newClient(t, "dashboard", p.addr()).Election("scheduler").Observe(ctx)
	recv := func() client.LeaderInfo {
		t.Helper()
		select {
		case info := <-ch:
			return info
		case <-time.After(5 * time.Second):
			t.Fatalf("Observe reported nothing within 5s")
		}
		return client.LeaderInfo{}
	}
	if info := recv(); !info.OK || info.Holder != "leader" {
		t.Fatalf("first report %+v, want the leader", info)
	}
	// Its next request is sent right after the report.
	poll.WaitFor(t, 5*time.Second, func() error {
		if n := len(p.requests()); n < 2 {
			return fmt.Errorf("%d requests, want the blocking one", n)
		}
		return nil
	})
	quiet := len(p.requests())
	poll.Holds(t, 3*time.Second, func() error {
		if n := len(p.requests()); n != quiet {
			return fmt.Errorf("Observe sent %d requests while nothing changed", n-quiet)
		}
		return nil
	})
	for i, r := range p.requests()[1:] {
		if r.Query.Get("index") == "" {
			t.Errorf("request %d of Observe (%s %s?%s) is not a blocking query", i+2, r.Method, r.Path, r.Query.Encode())
		}
	}

	resigned := time.Now()
	if err := lead.Resign(context.Background()); err != nil {
		t.Fatal(err)
	}
	info := recv()
	heard := time.Since(resigned)
	standby := <-next
	if !info.OK || info.Holder != "standby" || info.Token != standby.token {
		t.Errorf("report after the resignation %+v, want the standby with token %d", info, standby.token)
	}
	t.Logf("the follower heard of the new leader %v after the resignation; %d requests in all", heard.Round(time.Millisecond), len(p.requests()))
	if heard > time.Second {
		t.Errorf("the follower heard of the new leader %v after the resignation, want within 1s", heard)
	}
	if n := len(p.requests()); n > quiet+2 {
		t.Errorf("%d requests for one change, want at most 2", n-quiet)
	}
}
