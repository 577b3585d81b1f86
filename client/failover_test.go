package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

// With the default configuration the first retry of a failover comes
// within 25ms, and the next ones back off exponentially, each a jittered
// draw below a doubling ceiling. The servers' Retry-After of one second on
// every 503 does not hold a failover retry back (it is whole seconds; a
// hand-over takes milliseconds).
func TestFailoverFirstRetryIsQuickThenBacksOff(t *testing.T) {
	for _, tt := range []struct {
		name   string
		answer func(w http.ResponseWriter)
	}{
		{"503 no leader", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "1")
			writeError(w, 503, wire.CodeNoLeader, "no leader")
		}},
		{"503 leadership lost", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "1")
			writeError(w, 503, wire.CodeLeadershipLost, "lost")
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if n <= 4 {
					tt.answer(w)
					return
				}
				writeJSON(w, 200, testLease("k"))
			})
			cfg := DefaultConfig()
			cfg.Addresses = []string{srv.URL}
			c, rec := newRecordingClient(t, cfg)
			var ceilings []time.Duration
			c.jitter = func(d time.Duration) time.Duration {
				ceilings = append(ceilings, d)
				return d * 3 / 4
			}
			if _, _, err := c.Leases().Renew(context.Background(), "k", "h1", 17); err != nil {
				t.Fatalf("Renew: %v", err)
			}
			wantCeil := []time.Duration{25 * time.Millisecond, 50 * time.Millisecond, 100 * time.Millisecond, 200 * time.Millisecond}
			if !slices.Equal(ceilings, wantCeil) {
				t.Errorf("jitter ceilings = %v, want %v", ceilings, wantCeil)
			}
			want := []time.Duration{18750 * time.Microsecond, 37500 * time.Microsecond, 75 * time.Millisecond, 150 * time.Millisecond}
			if got := rec.got(); !slices.Equal(got, want) {
				t.Errorf("waits = %v, want the jittered %v", got, want)
			}
		})
	}
}

// A failover is retried beyond RetryMax while the waits add up to at most
// the client's Timeout: a call spans an election. The context still ends
// it earlier.
func TestFailoverRetriesSpanTheClientTimeout(t *testing.T) {
	noLeader := failingServer(t, 503, wire.CodeNoLeader, "no leader")
	// Timeout 5s, RetryMax 3, backoff 100ms doubling up to 1s, jitter at
	// its ceiling: 100+200+400+800+1000+1000+1000 = 4.5s; one more second
	// would pass 5s.
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond,
		800 * time.Millisecond, time.Second, time.Second, time.Second}
	for _, tt := range []struct {
		name    string
		addr    string
		wantErr func(error) bool
	}{
		{"503 no leader", noLeader.URL, func(err error) bool { return errors.Is(err, ErrNoLeader) }},
		{"connection refused", downAddress(t), func(err error) bool {
			var te *transportError
			return errors.As(err, &te)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, rec := newTestClient(t, tt.addr)
			_, _, err := c.Leases().Get(context.Background(), "k", nil)
			if !tt.wantErr(err) {
				t.Errorf("err = %v", err)
			}
			if got := rec.got(); !slices.Equal(got, want) {
				t.Errorf("waits = %v, want %v", got, want)
			}
		})
	}
	t.Run("the context ends it first", func(t *testing.T) {
		c, rec := newTestClient(t, noLeader.URL)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		sleep := c.sleep
		c.sleep = func(ctx context.Context, d time.Duration) error {
			if len(rec.got()) == 4 {
				cancel()
			}
			return sleep(ctx, d)
		}
		_, _, err := c.Leases().Get(ctx, "k", nil)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
		if got := len(rec.got()); got != 5 {
			t.Errorf("waits = %d, want 5: none after the context ended", got)
		}
	})
	t.Run("RetryMax 0 still disables retries", func(t *testing.T) {
		c, rec := newTestClient(t, noLeader.URL)
		c.cfg.RetryMax = 0
		if _, _, err := c.Leases().Get(context.Background(), "k", nil); !errors.Is(err, ErrNoLeader) {
			t.Errorf("err = %v, want ErrNoLeader", err)
		}
		if got := rec.got(); len(got) != 0 {
			t.Errorf("waits = %v, want none", got)
		}
	})
}

// A leader named by an answer over plain HTTP is followed only when it is
// a configured address, or when the client trusts hints: an answer is not
// authenticated, and requests carry the token. Otherwise the client keeps
// asking the server that answered (which forwards to the leader).
func TestUnconfiguredLeaderIsFollowedOnlyWhenTrusted(t *testing.T) {
	for _, trust := range []bool{false, true} {
		leader := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
			w.Header().Set(HeaderLeaderAddr, r.Host)
			writeJSON(w, 200, testLease("k"))
		})
		follower := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
			w.Header().Set(HeaderLeaderAddr, leader.hostPort())
			if n == 1 {
				writeError(w, 503, wire.CodeNoLeader, "electing")
				return
			}
			writeJSON(w, 200, testLease("k"))
		})
		c, _ := newTestClient(t, follower.URL)
		c.route.trusted = nil
		if trust {
			cfg := c.cfg
			cfg.TrustLeaderHints = true
			c.route.trusted = cfg.leaderTrust()
		}
		for i := 0; i < 3; i++ {
			if _, _, err := c.Leases().Get(context.Background(), "k", nil); err != nil {
				t.Fatalf("trust %v: Get %d: %v", trust, i, err)
			}
		}
		f, l := follower.count(), leader.count()
		if !trust && (f != 4 || l != 0) {
			t.Errorf("untrusted: follower saw %d requests and the unconfigured leader %d, want 4 and 0", f, l)
		}
		if trust && (f != 1 || l != 3) {
			t.Errorf("TrustLeaderHints: follower saw %d requests and the leader %d, want 1 (the failed one) and 3", f, l)
		}
	}
}

// Which unconfigured leader addresses the client follows.
func TestLeaderTrustRule(t *testing.T) {
	pool := x509.NewCertPool()
	tests := []struct {
		name      string
		cfg       Config
		https     bool // an https leader is followed
		plainHTTP bool // an http leader is followed
	}{
		{"plain HTTP", Config{}, false, false},
		{"TLS with the system roots", Config{TLS: TLSConfig{ServerName: "server.tenure"}}, false, false},
		{"TLS with the cluster's CA file", Config{TLS: TLSConfig{CAFile: "ca.pem"}}, true, false},
		{"TLS with RootCAs", Config{TLS: TLSConfig{Config: &tls.Config{RootCAs: pool}}}, true, false},
		{"TLS that skips verification", Config{TLS: TLSConfig{CAFile: "ca.pem", Config: &tls.Config{InsecureSkipVerify: true}}}, false, false},
		{"an HTTP client of the caller's", Config{HTTPClient: &http.Client{}}, false, false},
		{"TrustLeaderHints", Config{TrustLeaderHints: true}, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule := tt.cfg.leaderTrust()
			follows := func(a string) bool { return rule != nil && rule(a) }
			if got := follows("https://10.0.0.9:7500"); got != tt.https {
				t.Errorf("follows an https leader = %v, want %v", got, tt.https)
			}
			if got := follows("http://10.0.0.9:7500"); got != tt.plainHTTP {
				t.Errorf("follows an http leader = %v, want %v", got, tt.plainHTTP)
			}
		})
	}
}

// An attempt that times out is no failover: each costs a whole attempt
// timeout, so RetryMax bounds them.
func TestTimedOutAttemptsStopAtRetryMax(t *testing.T) {
	hang := make(chan struct{})
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	})
	defer close(hang)
	c, rec := newTestClient(t, srv.URL) // RetryMax 3
	// Waits of 1ms: a failover would be retried about 20 times within
	// the 20ms Timeout.
	c.cfg.Timeout = 20 * time.Millisecond
	c.cfg.RetryBaseDelay, c.cfg.RetryMaxDelay = time.Millisecond, time.Millisecond
	_, _, err := c.Leases().Get(context.Background(), "k", nil)
	var te *transportError
	if !errors.As(err, &te) {
		t.Errorf("err = %v, want a transport error", err)
	}
	if got := len(rec.got()); got != 3 {
		t.Errorf("waits = %d, want 3 (RetryMax)", got)
	}
}
