package integration

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
)

// SIGTERM on the leader of three servers hands leadership to another voter
// before the process exits: a holder renewing every TTL/3 never loses its
// lease, a new leader serves, the old process exits 0, and its log says it
// handed over (a crash-like exit would leave the others to an election).
// A SIGTERM on a follower just exits 0.
func TestLeaderSIGTERMHandsOverLeadership(t *testing.T) {
	c, l := startLedCluster(t, 3)
	cl := c.newClient(t, "holder-1")
	const ttl = 3 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	lease, meta, err := cl.Leases().Acquire(ctx, "graceful", client.AcquireRequest{Holder: "holder-1", TTL: ttl})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}

	// The holder renews every TTL/3. It would stop believing it holds the
	// lease at the send time of its last successful renewal + TTL.
	var (
		mu       sync.Mutex
		renewErr []error
		lapsed   []string
		sent     time.Time // the SIGTERM
		after    int       // renewals sent after it that succeeded
	)
	stopRenew := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		last := meta.SentAt
		tick := time.NewTicker(ttl / 3)
		defer tick.Stop()
		for {
			select {
			case <-stopRenew:
				return
			case <-tick.C:
			}
			rctx, rcancel := context.WithDeadline(ctx, last.Add(ttl))
			_, m, err := cl.Leases().Renew(rctx, "graceful", "holder-1", lease.Token)
			rcancel()
			mu.Lock()
			switch {
			case err == nil:
				if gap := m.SentAt.Sub(last); gap >= ttl {
					lapsed = append(lapsed, gap.String())
				}
				last = m.SentAt
				if !sent.IsZero() && m.SentAt.After(sent) {
					after++
				}
			case errors.Is(err, client.ErrLeaseLost):
				renewErr = append(renewErr, err)
			default:
				if time.Now().After(last.Add(ttl)) {
					lapsed = append(lapsed, "renewal failed past the lease's end: "+err.Error())
				}
			}
			mu.Unlock()
		}
	}()
	// A lease whose holder died: nobody renews it. The next leader must
	// start it with what it had left at the hand-over (plus a tenth for
	// the clocks' rates), not a full TTL, and never earlier than its end.
	const deadTTL = 10 * time.Second
	_, deadMeta, err := c.newClient(t, "holder-dead").Leases().Acquire(ctx, "abandoned", client.AcquireRequest{Holder: "holder-dead", TTL: deadTTL})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	time.Sleep(ttl / 2) // a renewal or two before the stop

	// SIGTERM the leader; poll the others until one is an established
	// leader.
	old := c.nodes[l]
	mu.Lock()
	sent = time.Now()
	mu.Unlock()
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		c.stop(t, l) // fails t unless it exits 0 within stopTimeout
	}()
	newLeader := -1
	for newLeader < 0 && time.Since(sent) < electionTimeout {
		for _, f := range c.followers(l) {
			if st, err := c.status(f); err == nil && st.Role == "leader" && st.Ready {
				newLeader = f
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	handover := time.Since(sent)
	if newLeader < 0 {
		t.Fatalf("no other server became an established leader within %v of the SIGTERM", electionTimeout)
	}
	t.Logf("hand-over: %s serves as leader %v after the SIGTERM to %s", c.nodes[newLeader].id, handover.Round(time.Millisecond), old.id)
	<-stopped
	if log, _ := os.ReadFile(old.logPath); !strings.Contains(string(log), "leadership_handed_over") {
		t.Errorf("%s exited without handing leadership over; its log ends:\n%s", old.id, tail(old.logPath, 15))
	}

	dead, _, err := cl.Leases().Get(ctx, "abandoned", nil)
	read := time.Now()
	if err != nil || !dead.HasExpiresIn {
		t.Fatalf("read of the abandoned lease on the new leader: %+v, %v", dead, err)
	}
	leftAtStop := deadTTL - sent.Sub(deadMeta.SentAt)
	if most := leftAtStop + leftAtStop/10 + 50*time.Millisecond; dead.ExpiresIn > most {
		t.Errorf("the new leader gave the abandoned lease %v, want at most %v (%v left at the SIGTERM, plus a tenth): it was restarted at a full TTL", dead.ExpiresIn, most, leftAtStop)
	}
	if least := deadTTL - read.Sub(deadMeta.SentAt); dead.ExpiresIn < least {
		t.Errorf("the new leader gave the abandoned lease %v, want at least %v: it would free before its end on the old leader", dead.ExpiresIn, least)
	}
	t.Logf("abandoned lease: %v left on the new leader (%v left at the SIGTERM, TTL %v)", dead.ExpiresIn.Round(time.Millisecond), leftAtStop.Round(time.Millisecond), deadTTL)

	// A new acquisition succeeds on the new leader, and the holder keeps
	// renewing through a full TTL after the hand-over.
	if _, _, err := cl.Leases().Acquire(ctx, "after", client.AcquireRequest{Holder: "holder-1", TTL: ttl}); err != nil {
		t.Errorf("acquire after the hand-over: %v", err)
	}
	time.Sleep(ttl)
	close(stopRenew)
	<-renewed
	mu.Lock()
	if len(renewErr) > 0 || len(lapsed) > 0 {
		t.Errorf("the holder lost its lease: lease_lost answers %v, lapses %v", renewErr, lapsed)
	}
	if after < 2 {
		t.Errorf("%d renewals sent after the SIGTERM succeeded, want at least 2 (every TTL/3 for a TTL)", after)
	}
	mu.Unlock()
	info, _, err := cl.Leases().Get(ctx, "graceful", nil)
	if err != nil || info.State != client.StateHeld || info.Token != lease.Token {
		t.Errorf("lease after the hand-over = %+v, %v; want held with token %d", info, err, lease.Token)
	}

	// A follower's SIGTERM just stops it.
	f := c.followers(newLeader)[0]
	c.stop(t, f)
	if log, _ := os.ReadFile(c.nodes[f].logPath); strings.Contains(string(log), "leadership_handed_over") {
		t.Errorf("follower %s logged a hand-over", c.nodes[f].id)
	}
}

// A single server has no one to hand over to: SIGTERM stops it, exit 0.
func TestSingleServerSIGTERMExits(t *testing.T) {
	c := startCluster(t, 1)
	c.leader(t)
	c.stop(t, 0)
	if log, _ := os.ReadFile(c.nodes[0].logPath); strings.Contains(string(log), "hand-over failed") {
		t.Errorf("the only server tried to hand over; its log ends:\n%s", tail(c.nodes[0].logPath, 10))
	}
}

// With mutual TLS and ACLs on, a leader's SIGTERM hands over too (the
// transfer runs over the TLS Raft transport), and a client given one
// follower's address and the cluster's CA follows the new leader it is
// told about, over https with its token.
func TestLeaderSIGTERMHandsOverWithTLSAndACLs(t *testing.T) {
	c, tc := startSecureCluster(t, 3, "app")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	boot, l := c.bootstrapTLS(t, "admin", tc)
	seed := c.followers(l)[0]
	cl := tokenClient(t, "app-1", boot.SecretID, tc, 5*time.Second, c.nodes[seed].httpAddr)
	if _, _, err := cl.Leases().Acquire(ctx, "tls/before", client.AcquireRequest{Holder: "app-1", TTL: 5 * time.Second}); err != nil {
		t.Fatalf("acquire before the stop: %v", err)
	}

	old := c.nodes[l]
	c.stop(t, l) // exit 0 within stopTimeout
	if log, _ := os.ReadFile(old.logPath); !strings.Contains(string(log), "leadership_handed_over") {
		t.Fatalf("%s exited without handing leadership over; its log ends:\n%s", old.id, tail(old.logPath, 15))
	}
	now := c.leader(t)
	for i := 0; i < 2; i++ {
		_, meta, err := cl.Leases().Acquire(ctx, "tls/after", client.AcquireRequest{Holder: "app-1", TTL: 5 * time.Second})
		if err != nil {
			t.Fatalf("acquire %d after the hand-over: %v", i, err)
		}
		if want := "https://" + c.nodes[now].httpAddr; i == 1 && meta.Address != want {
			t.Errorf("second acquire answered by %s, want the new leader %s (the client verifies it by the CA)", meta.Address, want)
		}
	}
}
