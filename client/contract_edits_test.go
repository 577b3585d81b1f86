package client

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

// SetMetadata re-acquires the kept lease with new metadata: same lease,
// same token, the cluster and Metadata show the new values.
func TestLeaseSetMetadata(t *testing.T) {
	f, _, l := heldScene(t, WithMetadata(map[string]string{"addr": "a:1"}))
	ctx := context.Background()
	before := l.Deadline()
	if err := l.SetMetadata(ctx, map[string]string{"addr": "b:2"}); err != nil {
		t.Fatalf("set metadata: %v", err)
	}
	if got := l.Metadata(); !maps.Equal(got, map[string]string{"addr": "b:2"}) {
		t.Errorf("Metadata() = %v, want addr=b:2", got)
	}
	if got := f.lease("scene-01"); !maps.Equal(got.metadata, map[string]string{"addr": "b:2"}) || got.token != l.Token() || !got.held {
		t.Errorf("cluster lease = %+v, want held under token %d with addr=b:2", got, l.Token())
	}
	if l.Err() != nil || l.Deadline().Before(before) {
		t.Errorf("after SetMetadata: err %v, deadline %v (was %v); want held, deadline not earlier", l.Err(), l.Deadline(), before)
	}
	if err := l.SetMetadata(ctx, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("SetMetadata(nil) = %v, want ErrInvalid", err)
	}
}

// Acquire with WithMetadata of a key the Client keeps for the same holder
// updates the metadata and returns the same *Lease; without metadata it is
// still ErrDuplicateLease.
func TestAcquireWithMetadataOfAKeptLeaseUpdatesIt(t *testing.T) {
	f, c, l := heldScene(t, WithMetadata(map[string]string{"v": "1"}))
	ctx := context.Background()
	again, err := c.Acquire(ctx, "scene-01", WithMetadata(map[string]string{"v": "2"}))
	if err != nil || again != l {
		t.Fatalf("acquire with new metadata = %p, %v; want the same *Lease %p", again, err, l)
	}
	if got := f.lease("scene-01").metadata["v"]; got != "2" || l.Metadata()["v"] != "2" {
		t.Errorf("metadata on the cluster %q, on the lease %q; want 2 and 2", got, l.Metadata()["v"])
	}
	if _, err := c.Acquire(ctx, "scene-01"); !errors.Is(err, ErrDuplicateLease) {
		t.Errorf("acquire without metadata = %v, want ErrDuplicateLease", err)
	}
}

// A SetMetadata that finds the lease ended on the cluster (the acquire is
// a new grant) does not keep that grant: it releases it and reports the
// loss.
func TestLeaseSetMetadataAfterTheClusterEndedIt(t *testing.T) {
	f, _, l := heldScene(t)
	ctx := context.Background()
	f.set(func(f *fakeTenure) { f.leases["scene-01"].held = false })
	if err := l.SetMetadata(ctx, map[string]string{"v": "2"}); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("SetMetadata = %v, want ErrLeaseLost", err)
	}
	if got := f.lease("scene-01"); got.held {
		t.Errorf("the new grant %d is still held, want it released", got.token)
	}
}

func TestReleaseOutcomes(t *testing.T) {
	f := newFakeTenure(t)
	c := newLeaseClient(t, f.hostPort())
	ctx := context.Background()
	info, _, err := c.Leases().Acquire(ctx, "k", AcquireRequest{Holder: "h1", TTL: time.Second})
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	_, err = c.Leases().Release(ctx, "k", "h2", info.Token)
	var ae *APIError
	if !errors.Is(err, ErrNotHolder) || !errors.As(err, &ae) || ae.Lease == nil || ae.Lease.Holder != "h1" || ae.StatusCode != http.StatusConflict {
		t.Fatalf("release by another holder = %v, want ErrNotHolder with the lease of h1", err)
	}
	m, err := c.Leases().Release(ctx, "k", "h1", info.Token)
	if err != nil || m.AlreadyGone {
		t.Fatalf("release = %+v, %v; want freed", m, err)
	}
	m, err = c.Leases().Release(ctx, "k", "h1", info.Token)
	if err != nil || !m.AlreadyGone {
		t.Fatalf("second release = %+v, %v; want already gone", m, err)
	}
}

func TestGroupPutCASAndReplace(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if r.URL.Query().Get("cas") == "0" {
			writeJSON(w, 409, map[string]any{"error": wire.CodeCASFailed, "message": "exists",
				"group": map[string]any{"name": "g", "keys": 2, "assigned": 0, "max_per_worker": 0, "modify_index": 7}})
			return
		}
		writeJSON(w, 200, map[string]any{"name": "g", "keys": 1, "assigned": 0, "max_per_worker": 0, "modify_index": 8})
	})
	c, _ := newTestClient(t, srv.hostPort())
	ctx := context.Background()
	_, err := c.Groups().Put(ctx, "g", GroupSpec{Keys: []string{"a"}})
	var ae *APIError
	if !errors.Is(err, ErrCASFailed) || !errors.As(err, &ae) || ae.Group == nil || ae.Group.ModifyIndex != 7 {
		t.Fatalf("Put of an existing group = %v, want ErrCASFailed with the group", err)
	}
	if _, err := c.Groups().PutCAS(ctx, "g", GroupSpec{Keys: []string{"a"}}, 7); err != nil {
		t.Fatalf("PutCAS: %v", err)
	}
	if _, err := c.Groups().Replace(ctx, "g", GroupSpec{Keys: []string{"a"}}); err != nil {
		t.Fatalf("Replace: %v", err)
	}
	reqs := srv.requests()
	if len(reqs) != 3 || reqs[0].Query.Encode() != "cas=0" || reqs[1].Query.Encode() != "cas=7" || reqs[2].Query.Encode() != "replace=true" {
		t.Errorf("requests = %+v, want ?cas=0, ?cas=7, ?replace=true (no retry of the refusal)", reqs)
	}
}

func TestGroupsEditControl(t *testing.T) {
	srv := answeringServer(t, 200, map[string]any{"key": "k", "disabled": true, "prohibited": []string{"w1"}})
	c, _ := newTestClient(t, srv.hostPort())
	on := true
	ctl, err := c.Groups().EditControl(context.Background(), "k", KeyControlEdit{Disabled: &on, Prohibit: []string{"w1"}})
	if err != nil || !ctl.Disabled || len(ctl.Prohibited) != 1 {
		t.Fatalf("EditControl = %+v, %v", ctl, err)
	}
	if r := srv.requests()[0]; r.Method != http.MethodPatch || r.Path != "/v1/controls/k" || r.Body != `{"disabled":true,"prohibit":["w1"]}` {
		t.Errorf("request = %s %s %s, want PATCH /v1/controls/k with the edit", r.Method, r.Path, r.Body)
	}
}

// A second Campaign of a candidate that leads is refused even with
// metadata: one process must never hold one leadership twice.
func TestCampaignWithMetadataTwiceIsADuplicate(t *testing.T) {
	f := newFakeTenure(t)
	e := newCandidate(t, f, "a").Election("scheduler", WithTTL(900*time.Millisecond), WithMetadata(map[string]string{"addr": "a:1"}))
	lead, err := e.Campaign(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer lead.Resign(context.Background())
	if _, err := e.Campaign(context.Background()); !errors.Is(err, ErrDuplicateLease) {
		t.Errorf("second Campaign = %v, want ErrDuplicateLease", err)
	}
}

// heldScene acquires scene-01 for 3s, with opts, through a client of a
// new fakeTenure, and returns the three; the lease is released when t
// ends.
func heldScene(t *testing.T, opts ...LeaseOption) (*fakeTenure, *Client, *Lease) {
	t.Helper()
	f := newFakeTenure(t)
	c := newLeaseClient(t, f.hostPort())
	ctx := context.Background()
	l, err := c.Acquire(ctx, "scene-01", append([]LeaseOption{WithTTL(3 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatalf("acquire: %v", err)
	}
	t.Cleanup(func() { l.Release(ctx) })
	return f, c, l
}
