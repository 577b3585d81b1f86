package client

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/internal/wait"
	"github.com/tenure-io/tenure/client/wire"
)

func TestRetryOn503ThenSuccessUsesSuccessfulSendTime(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			writeError(w, 503, wire.CodeNoLeader, "no leader")
			return
		}
		writeJSON(w, 200, testLease("k"))
	})
	c, rec := newTestClient(t, srv.URL)

	_, meta, err := c.Leases().Renew(context.Background(), "k", "h1", 17)
	if err != nil {
		t.Fatalf("Renew: %v", err)
	}
	reqs := srv.requests()
	if len(reqs) != 2 {
		t.Fatalf("server saw %d requests, want 2", len(reqs))
	}
	if got := rec.got(); len(got) != 1 {
		t.Errorf("backoff waits = %v, want one", got)
	}
	// SentAt must be taken before the second attempt was sent and after the
	// first one was answered: it is the send time of the successful attempt.
	if !meta.SentAt.After(reqs[0].At) {
		t.Errorf("SentAt %v is not after the failed attempt arrived (%v)", meta.SentAt, reqs[0].At)
	}
	if meta.SentAt.After(reqs[1].At) {
		t.Errorf("SentAt %v is after the successful attempt arrived (%v)", meta.SentAt, reqs[1].At)
	}
	if meta.Address != srv.URL {
		t.Errorf("Address = %q, want %q", meta.Address, srv.URL)
	}
}

func TestRetryDependsOnStatus(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		code      string
		wantCalls int
		wantErr   error // when the second call would also fail; nil: it succeeds
	}{
		{"429 overloaded", 429, wire.CodeOverloaded, 2, nil},
		{"503 no leader", 503, wire.CodeNoLeader, 2, nil},
		{"503 leadership lost", 503, wire.CodeLeadershipLost, 2, nil},
		{"504 timeout", 504, wire.CodeTimeout, 2, nil},
		{"502 from a proxy", 502, "", 2, nil},
		{"400 invalid", 400, wire.CodeInvalidTTL, 1, ErrInvalid},
		{"409 held", 409, wire.CodeHeld, 1, ErrHeld},
		{"404 lease lost", 404, wire.CodeLeaseLost, 1, ErrLeaseLost},
		{"404 not found", 404, wire.CodeNotFound, 1, ErrNotFound},
		{"500 internal", 500, wire.CodeInternal, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if n == 1 {
					if tt.code == "" {
						w.WriteHeader(tt.status)
						return
					}
					writeError(w, tt.status, tt.code, "first attempt")
					return
				}
				writeJSON(w, 201, testLease("k"))
			})
			c, rec := newTestClient(t, srv.URL)
			_, _, err := c.Leases().Acquire(context.Background(), "k", AcquireRequest{Holder: "h1", TTL: 10 * time.Second})
			if got := srv.count(); got != tt.wantCalls {
				t.Errorf("server saw %d requests, want %d", got, tt.wantCalls)
			}
			if got := len(rec.got()); got != tt.wantCalls-1 {
				t.Errorf("backoff waits = %d, want %d", got, tt.wantCalls-1)
			}
			if tt.wantCalls == 2 && err != nil {
				t.Errorf("err = %v, want success after a retry", err)
			}
			if tt.wantCalls == 1 {
				var ae *APIError
				if !errors.As(err, &ae) || ae.StatusCode != tt.status {
					t.Errorf("err = %v, want the *APIError of status %d", err, tt.status)
				}
				if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
					t.Errorf("err = %v, want %v", err, tt.wantErr)
				}
			}
		})
	}
}

func TestRetryRotatesPastDownAddress(t *testing.T) {
	up := answeringServer(t, 200, testLease("k"))
	c, rec := newTestClient(t, downAddress(t), up.URL)
	ctx := context.Background()

	_, meta, err := c.Leases().Get(ctx, "k", nil)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if meta.Address != up.URL {
		t.Errorf("answered by %q, want %q", meta.Address, up.URL)
	}
	if got := len(rec.got()); got != 1 {
		t.Errorf("backoff waits = %d, want 1 (one failed attempt at the down address)", got)
	}

	// The client remembers the address that answered.
	if _, _, err := c.Leases().Get(ctx, "k", nil); err != nil {
		t.Fatalf("second Get: %v", err)
	}
	if got := len(rec.got()); got != 1 {
		t.Errorf("backoff waits after the second call = %d, want still 1", got)
	}
	if got := up.count(); got != 2 {
		t.Errorf("up server saw %d requests, want 2", got)
	}
}

func TestRetryAfterIsHonoured(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		code       string
		retryAfter string
		wantMin    time.Duration
	}{
		{"429 overloaded", 429, wire.CodeOverloaded, "7", 7 * time.Second},
		{"503 too many connections", 503, wire.CodeTooManyConnections, "2", 2 * time.Second},
		{"below the backoff: backoff wins", 503, wire.CodeNoLeader, "0", 100 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if n == 1 {
					w.Header().Set("Retry-After", tt.retryAfter)
					writeError(w, tt.status, tt.code, "later")
					return
				}
				writeJSON(w, 200, map[string]any{"leases": []any{}, "index": 3})
			})
			c, rec := newTestClient(t, srv.URL)
			if _, _, err := c.Leases().List(context.Background(), nil, nil); err != nil {
				t.Fatalf("List: %v", err)
			}
			got := rec.got()
			if len(got) != 1 || got[0] < tt.wantMin {
				t.Errorf("waits = %v, want one wait of at least %v before the second attempt", got, tt.wantMin)
			}
			if n := srv.count(); n != 2 {
				t.Errorf("server saw %d requests, want 2", n)
			}
		})
	}
}

func TestRetryAfterBeyondDeadlineGivesUpAtOnce(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Retry-After", "7200")
		writeError(w, 429, wire.CodeOverloaded, "busy")
	})
	c, rec := newTestClient(t, srv.URL)
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	_, err := c.Leases().Release(ctx, "k", "h1", 1)
	if !errors.Is(err, ErrOverloaded) {
		t.Errorf("err = %v, want ErrOverloaded", err)
	}
	if got := rec.got(); len(got) != 0 {
		t.Errorf("waits = %v, want none: the wait would end after the deadline", got)
	}
}

func TestRetryStopsAtRetryMax(t *testing.T) {
	// A timeout is no failover: RetryMax bounds it (failover_test.go has
	// the failover schedule).
	srv := failingServer(t, 504, wire.CodeTimeout, "timeout")
	c, rec := newTestClient(t, srv.URL) // RetryMax 3
	_, _, err := c.Leases().Get(context.Background(), "k", nil)
	if !errors.Is(err, ErrTimeout) {
		t.Errorf("err = %v, want ErrTimeout", err)
	}
	if got := srv.count(); got != 4 {
		t.Errorf("server saw %d requests, want 4 (1 + RetryMax)", got)
	}
	// Full jitter at its ceiling: 100ms, 200ms, 400ms.
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}
	if got := rec.got(); !slices.Equal(got, want) {
		t.Errorf("waits = %v, want %v", got, want)
	}
}

func TestBackoffCeiling(t *testing.T) {
	c, _ := newTestClient(t, "127.0.0.1:1")
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, time.Second, time.Second}
	for i, w := range want {
		if got := c.backoff(i+1, 0); got != w {
			t.Errorf("backoff(%d) = %v, want %v", i+1, got, w)
		}
	}
	if got := c.backoff(200, 0); got != time.Second {
		t.Errorf("backoff(200) = %v, want the max delay 1s (no overflow)", got)
	}
	c.jitter = func(time.Duration) time.Duration { return 0 }
	if got := c.backoff(1, 3*time.Second); got != 3*time.Second {
		t.Errorf("backoff with Retry-After 3s = %v, want 3s", got)
	}
}

func TestContextCancelStopsRetries(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv := failingServer(t, 503, wire.CodeNoLeader, "no leader")
	c, _ := newTestClient(t, srv.URL)
	c.cfg.RetryBaseDelay = time.Hour
	c.cfg.RetryMaxDelay = time.Hour
	// The caller cancels while the client waits an hour before retrying:
	// the real wait must end at once.
	c.sleep = func(ctx context.Context, d time.Duration) error {
		cancel()
		return wait.Sleep(ctx, d)
	}

	_, _, err := c.Leases().Get(ctx, "k", nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if !errors.Is(err, ErrNoLeader) {
		t.Errorf("err = %v, want it to carry the last error ErrNoLeader too", err)
	}
	if got := srv.count(); got != 1 {
		t.Errorf("server saw %d requests, want 1", got)
	}
}

func TestCanceledContextSendsNothing(t *testing.T) {
	srv := answeringServer(t, 200, testLease("k"))
	c, rec := newTestClient(t, srv.URL)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := c.Leases().Get(ctx, "k", nil)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if n, w := srv.count(), len(rec.got()); n != 0 || w != 0 {
		t.Errorf("server saw %d requests and the client waited %d times, want 0 and 0", n, w)
	}
}

func TestUnsafeCallsRetryOnlyWhenNotCarriedOut(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		code      string
		wantCalls int
	}{
		{"no leader: not carried out", 503, wire.CodeNoLeader, 2},
		{"overloaded: not carried out", 429, wire.CodeOverloaded, 2},
		{"leadership lost: unknown outcome", 503, wire.CodeLeadershipLost, 1},
		{"timeout: unknown outcome", 504, wire.CodeTimeout, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if n == 1 {
					writeError(w, tt.status, tt.code, "first")
					return
				}
				writeJSON(w, 200, map[string]string{"leader_id": "n2"})
			})
			c, _ := newTestClient(t, srv.URL)
			_, _, err := c.Operator().TransferLeader(context.Background(), "n2")
			if got := srv.count(); got != tt.wantCalls {
				t.Errorf("server saw %d requests, want %d (err %v)", got, tt.wantCalls, err)
			}
		})
	}
}

func TestLeaderHeaderIsFollowed(t *testing.T) {
	leader := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set(HeaderLeaderAddr, r.Host)
		writeJSON(w, 200, testLease("k"))
	})
	follower := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set(HeaderLeaderAddr, leader.hostPort())
		writeJSON(w, 200, testLease("k"))
	})
	// The leader is one of the configured addresses (failover_test.go has
	// the leaders that are not).
	c, _ := newTestClient(t, follower.URL, leader.URL)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		if _, _, err := c.Leases().Get(ctx, "k", nil); err != nil {
			t.Fatalf("Get %d: %v", i, err)
		}
	}
	if f, l := follower.count(), leader.count(); f != 1 || l != 2 {
		t.Errorf("follower saw %d requests and leader %d, want 1 and 2", f, l)
	}
}

func TestUnreachableLeaderIsNotFollowedAgain(t *testing.T) {
	down := downAddress(t)
	follower := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set(HeaderLeaderAddr, down)
		writeJSON(w, 200, testLease("k"))
	})
	c, rec := newTestClient(t, follower.URL, down)
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		if _, _, err := c.Leases().Get(ctx, "k", nil); err != nil {
			t.Fatalf("Get %d: %v", i, err)
		}
	}
	// Call 1 follows the header; call 2 fails once at the leader address and
	// falls back; calls 3 and 4 go straight to the follower.
	if got := follower.count(); got != 4 {
		t.Errorf("follower saw %d requests, want 4", got)
	}
	if got := len(rec.got()); got != 1 {
		t.Errorf("backoff waits = %d, want 1", got)
	}
}

func TestFailedAnswerNamingLeaderIsFollowed(t *testing.T) {
	leader := answeringServer(t, 200, testLease("k"))
	follower := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set(HeaderLeaderAddr, leader.hostPort())
		writeError(w, 503, wire.CodeLeadershipLost, "lost")
	})
	other := answeringServer(t, 200, testLease("k"))
	c, _ := newTestClient(t, follower.URL, other.URL, leader.URL)
	if _, _, err := c.Leases().Renew(context.Background(), "k", "h1", 17); err != nil {
		t.Fatalf("Renew: %v", err)
	}
	if l, o := leader.count(), other.count(); l != 1 || o != 0 {
		t.Errorf("leader saw %d and the next configured address %d, want 1 and 0", l, o)
	}
}

func TestConcurrentCallsWithFailover(t *testing.T) {
	flaky := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n%2 == 0 {
			writeError(w, 503, wire.CodeNoLeader, "no leader")
			return
		}
		writeJSON(w, 200, testLease("k"))
	})
	good := answeringServer(t, 200, testLease("k"))
	c, _ := newTestClient(t, flaky.URL, downAddress(t), good.URL)
	c.cfg.RetryMax = 10
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, _, err := c.Leases().Get(context.Background(), "k", nil); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Get: %v", err)
	}
}
