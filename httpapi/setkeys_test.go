package httpapi

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/worker"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// heldBy returns the keys the workers hold, sorted.
func heldBy(ws ...*worker.Worker) []string {
	var out []string
	for _, w := range ws {
		out = append(out, w.Keys()...)
	}
	slices.Sort(out)
	return out
}

// Syncing a group with the application's own store is one idempotent call
// (Groups().SetKeys, PUT /v1/groups/{name}/keys): with live workers, the
// removed keys are handed back and free, the new keys are owned, the
// staying keys stay owned; the same set again changes nothing, its modify
// index neither; an empty set empties the group and the workers hold
// nothing.
func TestSetKeysSyncsAGroupWithLiveWorkers(t *testing.T) {
	c := startClusterWith(t, 1, inproc.Options{TCP: true, Gossip: true, Serve: serveAPI})
	url := c.leader().url
	do(t, "PUT", url+"/v1/groups/g", `{"keys":["g-0","g-1","g-2","g-3"]}`).wantStatus(t, "put group", 200)
	w1, w2 := runWorker(t, c, "w1", 8), runWorker(t, c, "w2", 8)
	settle := func(what string, want []string) {
		t.Helper()
		harness.WaitUntil(t, 20*time.Second, what, func() bool { return slices.Equal(heldBy(w1, w2), want) })
	}
	settle("every key owned", []string{"g-0", "g-1", "g-2", "g-3"})

	cfg := client.DefaultConfig()
	cfg.Addresses = []string{url}
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	want := []string{"g-0", "g-1", "g-4", "g-5"}
	sum, err := cl.Groups().SetKeys(ctx, "g", []string{"g-5", "g-1", "g-4", "g-0", "g-5"})
	if err != nil {
		t.Fatalf("SetKeys: %v", err)
	}
	if sum.Keys != 4 {
		t.Errorf("SetKeys answered %d keys, want 4", sum.Keys)
	}
	settle("the new set owned", want)
	for _, key := range []string{"g-2", "g-3"} {
		if l, _, err := cl.Leases().Get(ctx, key, nil); err != nil || l.Held() {
			t.Errorf("removed key %s: %+v, %v; want it free", key, l, err)
		}
	}
	g, _, err := cl.Groups().Get(ctx, "g", nil)
	if err != nil {
		t.Fatal(err)
	}
	again, err := cl.Groups().SetKeys(ctx, "g", want)
	if err != nil {
		t.Fatalf("SetKeys again: %v", err)
	}
	if after, _, _ := cl.Groups().Get(ctx, "g", nil); again.ModifyIndex != g.ModifyIndex || after.ModifyIndex != g.ModifyIndex {
		t.Errorf("the same set again moved the modify index %d to %d", g.ModifyIndex, again.ModifyIndex)
	}
	if _, err := cl.Groups().SetKeys(ctx, "g", nil); err != nil {
		t.Fatalf("SetKeys of no keys: %v", err)
	}
	settle("no key owned", nil)
}
