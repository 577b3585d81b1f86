package httpapi

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/worker"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// ownership is one run of a worker's handler on a key.
type ownership struct {
	worker     string
	token      uint64
	start, end time.Time // end is zero while it runs
}

// ownerLog records every handler run of the workers of a test.
type ownerLog struct {
	mu   sync.Mutex
	runs map[string][]*ownership // by key
}

func (o *ownerLog) handler(id string) worker.Handler {
	return func(ctx context.Context, key string, token uint64) {
		run := &ownership{worker: id, token: token, start: time.Now()}
		o.mu.Lock()
		o.runs[key] = append(o.runs[key], run)
		o.mu.Unlock()
		<-ctx.Done()
		o.mu.Lock()
		run.end = time.Now()
		o.mu.Unlock()
	}
}

// current is the worker running key's handler now and its token ("" and 0
// when none).
func (o *ownerLog) current(key string) (string, uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	runs := o.runs[key]
	if n := len(runs); n > 0 && runs[n-1].end.IsZero() {
		return runs[n-1].worker, runs[n-1].token
	}
	return "", 0
}

// owned returns the keys some handler runs on now, sorted.
func (o *ownerLog) owned() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for key, runs := range o.runs {
		if n := len(runs); n > 0 && runs[n-1].end.IsZero() {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out
}

// problems returns the runs of one key by two handlers at once, and the
// tokens of a key that did not grow from one run to the next.
func (o *ownerLog) problems() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []string
	for key, runs := range o.runs {
		for i := 1; i < len(runs); i++ {
			prev, next := runs[i-1], runs[i]
			if prev.end.IsZero() || next.start.Before(prev.end) {
				out = append(out, fmt.Sprintf("%s: %s (token %d) started before %s (token %d) ended", key, next.worker, next.token, prev.worker, prev.token))
			}
			if next.token <= prev.token {
				out = append(out, fmt.Sprintf("%s: token %d after %d", key, next.token, prev.token))
			}
		}
	}
	return out
}

// The operator's controls, each used on live workers: a revoke (bump) ends
// the holder's run and the key is owned again under a larger token; a
// prohibit moves the key to another worker; a disable leaves it unowned
// until it is enabled; a live change of max_per_worker drops and regains
// keys; keys added and removed at runtime are owned and handed back. No
// key is ever run by two handlers at once, and tokens only grow.
func TestOperatorControlsWithLiveWorkers(t *testing.T) {
	c := startClusterWith(t, 1, inproc.Options{TCP: true, Gossip: true, Serve: serveAPI})
	url := c.leader().url
	do(t, "PUT", url+"/v1/groups/g", `{"keys":["g-0","g-1","g-2","g-3"]}`).wantStatus(t, "put group", 200)
	o := &ownerLog{runs: map[string][]*ownership{}}
	for _, id := range []string{"w1", "w2"} {
		runWorkerWith(t, c, "g", "", o.handler(id), worker.WithWorkerID(id), worker.WithCapacity(8))
	}
	waitOwned := func(what string, want ...string) {
		t.Helper()
		harness.WaitUntil(t, 20*time.Second, what, func() bool { return slices.Equal(o.owned(), want) })
	}
	waitOwned("every key owned", "g-0", "g-1", "g-2", "g-3")
	defer func() {
		for _, p := range o.problems() {
			t.Error(p)
		}
	}()

	t.Run("revoke", func(t *testing.T) {
		holder, token := o.current("g-0")
		do(t, "POST", url+"/v1/revoke/g-0", "").wantStatus(t, "revoke g-0", 200)
		harness.WaitUntil(t, 20*time.Second, "g-0 owned again under a new token", func() bool {
			_, now := o.current("g-0")
			return now > token
		})
		t.Logf("g-0: %s token %d, revoked, then token %d", holder, token, func() uint64 { _, n := o.current("g-0"); return n }())
	})

	t.Run("prohibit", func(t *testing.T) {
		holder, _ := o.current("g-1")
		other := map[string]string{"w1": "w2", "w2": "w1"}[holder]
		do(t, "PATCH", url+"/v1/controls/g-1", fmt.Sprintf(`{"prohibit":[%q]}`, holder)).wantStatus(t, "prohibit", 200)
		harness.WaitUntil(t, 20*time.Second, "g-1 moved to "+other, func() bool { w, _ := o.current("g-1"); return w == other })
		do(t, "PATCH", url+"/v1/controls/g-1", fmt.Sprintf(`{"allow":[%q]}`, holder)).wantStatus(t, "allow", 200)
	})

	t.Run("disable", func(t *testing.T) {
		do(t, "PATCH", url+"/v1/controls/g-2", `{"disabled":true}`).wantStatus(t, "disable", 200)
		waitOwned("g-2 given up", "g-0", "g-1", "g-3")
		var dis client.KeyControl
		do(t, "GET", url+"/v1/controls/g-2", "").decode(t, &dis)
		if !dis.Disabled {
			t.Fatalf("g-2's controls read %+v, want disabled", dis)
		}
		do(t, "PATCH", url+"/v1/controls/g-2", `{"disabled":false}`).wantStatus(t, "enable", 200)
		waitOwned("g-2 owned again once enabled", "g-0", "g-1", "g-2", "g-3")
	})

	t.Run("max per worker", func(t *testing.T) {
		do(t, "PUT", url+"/v1/groups/g/max-per-worker", `{"max_per_worker":1}`).wantStatus(t, "max 1", 200)
		harness.WaitUntil(t, 20*time.Second, "two keys owned, one per worker", func() bool {
			owned := o.owned()
			by := map[string]int{}
			for _, k := range owned {
				w, _ := o.current(k)
				by[w]++
			}
			return len(owned) == 2 && by["w1"] == 1 && by["w2"] == 1
		})
		do(t, "PUT", url+"/v1/groups/g/max-per-worker", `{"max_per_worker":0}`).wantStatus(t, "no max", 200)
		waitOwned("every key owned again", "g-0", "g-1", "g-2", "g-3")
	})

	t.Run("keys added and removed", func(t *testing.T) {
		do(t, "POST", url+"/v1/groups/g/keys", `{"add":["g-4","g-5"],"remove":["g-0"]}`).wantStatus(t, "edit keys", 200)
		waitOwned("g-4 and g-5 owned, g-0 handed back", "g-1", "g-2", "g-3", "g-4", "g-5")
	})
}

// The owner log's checker finds an overlap and a token that did not grow.
func TestOwnerLogFindsOverlapsAndOldTokens(t *testing.T) {
	at := func(s int) time.Time { return time.Unix(int64(s), 0) }
	o := &ownerLog{runs: map[string][]*ownership{
		"fine":    {{worker: "w1", token: 1, start: at(0), end: at(2)}, {worker: "w2", token: 3, start: at(2)}},
		"overlap": {{worker: "w1", token: 1, start: at(0), end: at(5)}, {worker: "w2", token: 2, start: at(4), end: at(6)}},
		"old":     {{worker: "w1", token: 4, start: at(0), end: at(1)}, {worker: "w2", token: 4, start: at(2)}},
	}}
	got := o.problems()
	slices.Sort(got)
	want := []string{"old: token 4 after 4", "overlap: w2 (token 2) started before w1 (token 1) ended"}
	if !slices.Equal(got, want) {
		t.Errorf("problems = %q, want %q", got, want)
	}
}

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
