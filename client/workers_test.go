package client

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/client/wire"
)

// Drain and SetControl send force only when asked, and Drain returns the
// cluster's warnings; an unknown worker is ErrNotFound.
func TestDrainAndControlForce(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch {
		case r.URL.Path == "/v1/workers/ghost/drain" && r.URL.Query().Get("force") == "":
			writeError(w, 404, wire.CodeNotFound, `worker "ghost" is unknown; force=true drains it anyway`)
		case r.URL.Path == "/v1/workers/ghost/drain":
			writeJSON(w, 200, DrainResult{Worker: "ghost", Draining: true, Warnings: []string{"last worker of g"}})
		default:
			writeJSON(w, 200, KeyControl{Key: "k", Disabled: true, Prohibited: []string{}})
		}
	})
	c, _ := newTestClient(t, srv.hostPort())
	ctx := context.Background()
	if _, err := c.Groups().Drain(ctx, "ghost", true); !errors.Is(err, ErrNotFound) {
		t.Fatalf("drain of an unknown worker: %v, want ErrNotFound", err)
	}
	res, err := c.Groups().Drain(ctx, "ghost", true, WithForce())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Warnings, []string{"last worker of g"}) || !res.Draining {
		t.Errorf("forced drain returned %+v, want draining with the warning", res)
	}
	if err := c.Groups().SetControl(ctx, "k", KeyControl{Disabled: true}, WithForce()); err != nil {
		t.Fatal(err)
	}
	if err := c.Groups().SetControl(ctx, "k", KeyControl{Disabled: true}); err != nil {
		t.Fatal(err)
	}
	reqs := srv.requests()
	var forces []string
	for _, r := range reqs {
		forces = append(forces, r.Query.Get("force"))
	}
	if want := []string{"", "true", "true", ""}; !reflect.DeepEqual(forces, want) {
		t.Errorf("force of each request: %q, want %q", forces, want)
	}
}

// Workers lists the workers; Worker reads one (?id=) and is ErrNotFound
// when the cluster lists none by that id.
func TestWorkersList(t *testing.T) {
	w1 := WorkerInfo{ID: "w1", Status: "alive", Groups: []string{"g"}, Capacity: 4, Drained: true,
		Keys: []WorkerGroupKeys{{Group: "g", Targets: []string{}, Holds: []string{"g-1"}}}}
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		list := wire.WorkerList{Workers: []WorkerInfo{}, Index: 7}
		if id := r.URL.Query().Get("id"); id == "" || id == "w1" {
			list.Workers = append(list.Workers, w1)
		}
		writeJSON(w, 200, list)
	})
	c, _ := newTestClient(t, srv.hostPort())
	ctx := context.Background()
	all, meta, err := c.Groups().Workers(ctx, nil)
	if err != nil || len(all) != 1 || !reflect.DeepEqual(all[0], w1) || meta.Index != 7 {
		t.Fatalf("Workers: %+v %+v %v, want w1 at index 7", all, meta, err)
	}
	one, _, err := c.Groups().Worker(ctx, "w1", &QueryOptions{WaitIndex: 7})
	if err != nil || one.ID != "w1" {
		t.Fatalf("Worker(w1): %+v %v", one, err)
	}
	if got := srv.requests()[1].Query; got.Get("id") != "w1" || got.Get("index") != "7" {
		t.Errorf("Worker(w1) asked %v, want id=w1 and index=7", got)
	}
	if _, _, err := c.Groups().Worker(ctx, "w9", nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("Worker(w9): %v, want ErrNotFound", err)
	}
}

// SetControlWith sends the controls alone: the path names the key, and
// an answer's Ended is not sent back (the server refuses both fields).
func TestSetControlSendsOnlyTheControls(t *testing.T) {
	srv := answeringServer(t, 200, KeyControl{Key: "k", Disabled: true, Prohibited: []string{"h1"}})
	c, _ := newTestClient(t, srv.hostPort())
	read := KeyControl{Key: "k", Disabled: true, Prohibited: []string{"h1"}, Ended: []RevokedLease{{Key: "k", Holder: "h1", Token: 3}}}
	if _, err := c.Groups().SetControlWith(context.Background(), "k", read); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Groups().SetControlWith(context.Background(), "k", KeyControl{}); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range srv.requests() {
		got = append(got, r.Body)
	}
	want := []string{`{"disabled":true,"prohibited":["h1"]}`, `{"disabled":false,"prohibited":[]}`}
	if len(got) != len(want) {
		t.Fatalf("bodies sent: %q, want %q", got, want)
	}
	for i := range want {
		if strings.TrimSpace(got[i]) != want[i] {
			t.Errorf("body %d: got %s, want %s", i, got[i], want[i])
		}
	}
}
