package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/worker"
)

// TestSecureClusterClients: three servers with everything on: mutual TLS
// on the API and on Raft, gossip encryption and ACLs (default deny). With a
// client certificate, a bound token and the gossip key, the Go client's
// kept-alive lease, an Election and a Worker do their jobs unchanged.
func TestSecureClusterClients(t *testing.T) {
	gossipKey := newGossipKey(t)
	c, tc := startSecureCluster(t, 3, "app", "-gossip-key", gossipKey)
	newClient := func(holder, token string) *client.Client {
		t.Helper()
		cl := tlsClient(t, holder, tc, c.httpAddrs()...)
		if token == "" {
			return cl
		}
		return tokenClient(t, holder, token, tc, 5*time.Second, c.httpAddrs()...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	boot := bootstrapACL(t, newClient("admin", ""), startTimeout)
	c.token = boot.SecretID
	c.leader(t)
	admin := newClient("admin", boot.SecretID)
	app := policyToken(t, ctx, admin, "app", "app-", []client.ACLRule{
		{Prefix: "", Rights: []string{client.RightRead}},
		{Prefix: "scenes/", Rights: []string{client.RightWrite}},
		{Prefix: "elections/", Rights: []string{client.RightWrite}},
		{Prefix: "parts/", Rights: []string{client.RightWrite}},
	})
	if _, err := admin.Groups().Put(ctx, "parts", client.GroupSpec{Prefix: "parts/", Count: 3}); err != nil {
		t.Fatal(err)
	}

	// Keep-alive: a lease held for a TTL and a half of renewals.
	lease, err := newClient("app-tracker", app.SecretID).Acquire(ctx, "scenes/1", client.WithTTL(2*time.Second))
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	select {
	case <-lease.Context().Done():
		t.Fatalf("lease lost while kept alive: %v", lease.Err())
	case <-time.After(3 * time.Second):
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatalf("Release: %v", err)
	}

	// An election leads.
	mustLead(t, ctx, newClient("app-sched", app.SecretID), "elections/scheduler")

	// A worker with the gossip key registers, joins gossip and owns every
	// key of the group.
	keys, err := worker.ParseGossipKeys(gossipKey)
	if err != nil {
		t.Fatal(err)
	}
	w := runWorker(t, ctx, newClient("app-w1", app.SecretID), "parts", worker.WithWorkerID("app-w1"),
		worker.WithWorkerTTL(2*time.Second), worker.WithGossipKeys(keys...), worker.WithJoin(c.nodes[0].gossipAddr))
	poll.WaitFor(t, 30*time.Second, func() error { return w.owns(3) })

	// The event history, through the Go client and the CLI, over mutual
	// TLS with the app's token: the kept-alive lease's acquire and release,
	// each once; operator changes name the accessor of the admin token.
	evs, _, err := newClient("app-events", app.SecretID).Events().List(ctx, client.EventFilter{Prefix: "scenes/"})
	if err != nil {
		t.Fatalf("events: %v", err)
	}
	if len(evs) != 2 || evs[0].Type != client.EventAcquired || evs[1].Type != client.EventReleased || evs[0].Holder != "app-tracker" {
		t.Fatalf("events of scenes/: %+v, want the acquire and release of scenes/1 by app-tracker", evs)
	}
	groupEvents, _, err := admin.Events().List(ctx, client.EventFilter{Types: []string{client.EventGroupChanged}})
	if err != nil || len(groupEvents) != 1 || groupEvents[0].By != boot.AccessorID {
		t.Fatalf("group events %+v, %v: want one, by the admin token's accessor %s", groupEvents, err, boot.AccessorID)
	}
	r := mustRunTenure(t, tlsEnv(tc, app.SecretID, c.httpAddrs()...), "events", "-prefix", "scenes/", "-type", "released")
	if !strings.Contains(r.stdout, "released key=scenes/1 holder=app-tracker") {
		t.Errorf("tenure events over TLS with ACLs printed %q, want the release of scenes/1", r.stdout)
	}
	// The placement health report, forwarded to the leader over mutual
	// TLS, with the app token's read on every name: every key owned, no
	// worker stuck.
	poll.WaitFor(t, 30*time.Second, func() error {
		h, err := newClient("app-health", app.SecretID).PlacementHealth(ctx, time.Hour)
		if err != nil {
			return err
		}
		if !h.OK || len(h.Unowned) != 0 || len(h.Stuck) != 0 {
			return fmt.Errorf("placement health = %+v, want ok with every key owned", h)
		}
		return nil
	})
	// The workers route and the drain answer over TLS with ACLs: the app
	// token reads the workers (read on ""); the admin drains, and is told
	// that the group is left without a worker.
	poll.WaitFor(t, 10*time.Second, func() error {
		ws, _, err := newClient("app-ops", app.SecretID).Groups().Workers(ctx, nil)
		if err != nil {
			return err
		}
		if len(ws) != 1 || ws[0].ID != "app-w1" || ws[0].Status != "alive" || len(ws[0].Keys) != 1 || len(ws[0].Keys[0].Holds) != 3 {
			return fmt.Errorf("workers %+v: want app-w1 alive holding the 3 keys of parts", ws)
		}
		return nil
	})
	if _, err := newClient("app-ops", app.SecretID).Groups().Drain(ctx, "app-w1", true); !errors.Is(err, client.ErrPermissionDenied) {
		t.Errorf("drain with a token without the groups right: %v, want permission denied", err)
	}
	res, err := admin.Groups().Drain(ctx, "app-w1", true)
	if err != nil {
		t.Fatalf("drain app-w1: %v", err)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], `group "parts"`) {
		t.Errorf("draining the only worker of parts warned %q", res.Warnings)
	}
	poll.WaitFor(t, 30*time.Second, func() error { return w.owns(0) })

	// The operator's contract routes over mutual TLS with ACLs: a group is
	// not replaced by accident, only with cas or replace; a control edit is
	// atomic; a revoke by holder ends every lease of the holder safely.
	if _, err := admin.Groups().Put(ctx, "parts", client.GroupSpec{Prefix: "parts/", Count: 4}); !errors.Is(err, client.ErrCASFailed) {
		t.Errorf("put of an existing group without cas: %v, want cas_failed", err)
	}
	if g, err := admin.Groups().Replace(ctx, "parts", client.GroupSpec{Prefix: "parts/", Count: 4}); err != nil || g.Keys != 4 {
		t.Errorf("replace parts: %+v, %v; want 4 keys", g, err)
	}
	ctl, err := admin.Groups().EditControl(ctx, "parts/0", client.KeyControlEdit{Prohibit: []string{"app-x"}})
	if err != nil || len(ctl.Prohibited) != 1 || ctl.Prohibited[0] != "app-x" {
		t.Errorf("edit of parts/0's controls: %+v, %v; want app-x prohibited", ctl, err)
	}
	appLeases := newClient("app-holder", app.SecretID).Leases()
	var batchToken uint64
	for _, key := range []string{"scenes/7", "scenes/8"} {
		l, _, err := appLeases.Acquire(ctx, key, client.AcquireRequest{Holder: "app-batch", TTL: 30 * time.Second})
		if err != nil {
			t.Fatalf("acquire %s: %v", key, err)
		}
		if key == "scenes/7" {
			batchToken = l.Token
		}
	}
	if _, _, err := appLeases.RevokeHolder(ctx, "app-batch"); !errors.Is(err, client.ErrPermissionDenied) {
		t.Errorf("revoke by holder with the app token: %v, want permission denied", err)
	}
	ended, _, err := admin.Leases().RevokeHolder(ctx, "app-batch")
	if err != nil || len(ended) != 2 || ended[0].Key != "scenes/7" || ended[1].Key != "scenes/8" || ended[0].Forced || ended[0].FreesIn <= 0 {
		t.Errorf("revoke by holder: %+v, %v; want both leases ending safely, in key order", ended, err)
	}
	var ae *client.APIError
	if _, _, err := appLeases.Renew(ctx, "scenes/7", "app-batch", batchToken); !errors.As(err, &ae) || ae.Reason != client.ReasonRevoked {
		t.Errorf("renewal of a revoked lease: %v, want lease_lost (revoked)", err)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
