package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/client/worker"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// wantNotFound fails unless r is 404 not_found with a message that names
// every part of want.
func (r reply) wantNotFound(t *testing.T, what string, want ...string) {
	t.Helper()
	r.wantStatus(t, what, http.StatusNotFound)
	e := r.apiErr(t)
	if e.Error != wire.CodeNotFound {
		t.Fatalf("%s: code %q, want %q (%s)", what, e.Error, wire.CodeNotFound, e.Message)
	}
	for _, w := range want {
		if !strings.Contains(e.Message, w) {
			t.Errorf("%s: message %q does not name %s", what, e.Message, w)
		}
	}
}

// A drain of a worker, or a disable or prohibit of a key, that nothing in
// the cluster knows is most likely a typo: it is refused with 404 naming
// the worker or key and force=true, and force=true does it anyway.
func TestUnknownWorkerOrKeyNeedsForce(t *testing.T) {
	c := startCluster(t, 1)
	url := c.leader().url
	do(t, "PUT", url+"/v1/groups/g", `{"prefix":"g-","count":2}`).wantStatus(t, "put group", 200)
	acquire(t, c.leader(), "loose/1", "h1")

	do(t, "POST", url+"/v1/workers/ghost/drain", "").wantNotFound(t, "drain an unknown worker", `"ghost"`, "force=true")
	var res client.DrainResult
	r := do(t, "POST", url+"/v1/workers/ghost/drain?force=true", "")
	r.wantStatus(t, "forced drain", 200)
	r.decode(t, &res)
	if res.Worker != "ghost" || !res.Draining {
		t.Errorf("forced drain answered %+v, want ghost draining", res)
	}
	// Its drain mark makes it known: a second drain needs no force.
	do(t, "POST", url+"/v1/workers/ghost/drain", "").wantStatus(t, "drain a drained worker again", 200)
	// Undoing a drain never needs it.
	do(t, "POST", url+"/v1/workers/ghost/drain", `{"draining":false}`).wantStatus(t, "undrain", 200)
	do(t, "POST", url+"/v1/workers/nobody/drain", `{"draining":false}`).wantStatus(t, "undrain an unknown worker", 200)
	// A worker that holds a lease is known.
	do(t, "POST", url+"/v1/workers/h1/drain", "").wantStatus(t, "drain a lease holder", 200)

	for _, body := range []string{`{"disabled":true}`, `{"prohibited":["h9"]}`} {
		do(t, "PUT", url+"/v1/controls/typo-1", body).wantNotFound(t, "control "+body+" of an unknown key", `"typo-1"`, "force=true")
	}
	for _, key := range []string{"g-1", "loose/1"} { // a group key; a key with a lease
		do(t, "PUT", url+"/v1/controls/"+key, `{"disabled":true}`).wantStatus(t, "disable "+key, 200)
	}
	do(t, "PUT", url+"/v1/controls/typo-2", `{"disabled":false,"prohibited":[]}`).wantStatus(t, "clear the controls of an unknown key", 200)
	do(t, "PUT", url+"/v1/controls/typo-1?force=true", `{"disabled":true}`).wantStatus(t, "forced disable", 200)
	if r := do(t, "GET", url+"/v1/controls/typo-1", ""); !strings.Contains(string(r.body), `"disabled":true`) {
		t.Errorf("after a forced disable the key reads %s", r.body)
	}
	do(t, "PUT", url+"/v1/controls/typo-1", `{"disabled":false}`).wantStatus(t, "enable a key that has controls", 200)

	r = do(t, "POST", url+"/v1/workers/ghost/drain?force=maybe", "")
	r.wantStatus(t, "force=maybe", 400)
	if e := r.apiErr(t); e.Error != wire.CodeInvalidQuery || !strings.Contains(e.Message, "force") {
		t.Errorf("force=maybe: %+v, want invalid_query naming force", e)
	}
}

// runWorker runs a worker.Worker of group g with id on cluster c until the
// test ends.
func runWorker(t *testing.T, c *testCluster, id string, capacity int) *worker.Worker {
	t.Helper()
	return runWorkerAs(t, c, "g", "", worker.WithWorkerID(id), worker.WithCapacity(capacity))
}

// runWorkerAs runs a worker.Worker of group with the ACL token secret ("" for
// none) on cluster c until the test ends.
func runWorkerAs(t *testing.T, c *testCluster, group, secret string, opts ...worker.WorkerOption) *worker.Worker {
	t.Helper()
	return runWorkerWith(t, c, group, secret, func(ctx context.Context, key string, token uint64) { <-ctx.Done() }, opts...)
}

// runWorkerWith is runWorkerAs with handler.
func runWorkerWith(t *testing.T, c *testCluster, group, secret string, handler worker.Handler, opts ...worker.WorkerOption) *worker.Worker {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{c.leader().url}
	cfg.Token = secret
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts = append(opts, worker.WithJoin(c.cluster.GossipAddr(0)), worker.WithWorkerTTL(2*time.Second), worker.WithWorkerLogger(hclog.NewNullLogger()))
	w := worker.New(cl, group, handler, opts...)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return w
}

// workers reads GET /v1/workers.
func workers(t *testing.T, url string) map[string]client.WorkerInfo {
	t.Helper()
	var list wire.WorkerList
	do(t, "GET", url+"/v1/workers", "").decode(t, &list)
	out := map[string]client.WorkerInfo{}
	for _, w := range list.Workers {
		out[w.ID] = w
	}
	return out
}

func holds(w client.WorkerInfo) int {
	n := 0
	for _, k := range w.Keys {
		n += len(k.Holds)
	}
	return n
}

// GET /v1/workers shows every gossip worker with its groups, capacity,
// drain state and keys; draining the last live worker of a group answers
// a warning (and still drains it).
func TestWorkersListAndLastWorkerWarning(t *testing.T) {
	c := startClusterWith(t, 1, inproc.Options{TCP: true, Gossip: true, Serve: serveAPI})
	url := c.leader().url
	do(t, "PUT", url+"/v1/groups/g", `{"prefix":"g-","count":4}`).wantStatus(t, "put group", 200)
	runWorker(t, c, "w1", 10)
	runWorker(t, c, "w2", 0)
	harness.WaitFor(t, 20*time.Second, func() error {
		ws := workers(t, url)
		if holds(ws["w1"])+holds(ws["w2"]) != 4 || holds(ws["w1"]) == 0 || holds(ws["w2"]) == 0 {
			return fmt.Errorf("workers %+v: want the 4 keys held by both", ws)
		}
		return nil
	})
	w1 := workers(t, url)["w1"]
	if w1.Status != "alive" || w1.Capacity != 10 || strings.Join(w1.Groups, ",") != "g" || w1.Drained || w1.Addr == "" ||
		len(w1.Keys) != 1 || w1.Keys[0].Group != "g" || len(w1.Keys[0].Targets) == 0 {
		t.Errorf("w1 listed as %+v, want alive, capacity 10, group g with targets and holds", w1)
	}
	var res client.DrainResult
	r := do(t, "POST", url+"/v1/workers/w1/drain", "")
	r.wantStatus(t, "drain w1", 200)
	r.decode(t, &res)
	if len(res.Warnings) != 0 {
		t.Errorf("draining w1 while w2 serves g warned %q", res.Warnings)
	}
	harness.WaitFor(t, 20*time.Second, func() error {
		ws := workers(t, url)
		if holds(ws["w1"]) != 0 || holds(ws["w2"]) != 4 || !ws["w1"].Drained {
			return fmt.Errorf("workers %+v: want w1 drained holding nothing, w2 holding all 4", ws)
		}
		return nil
	})
	r = do(t, "POST", url+"/v1/workers/w2/drain", "")
	r.wantStatus(t, "drain w2", 200)
	r.decode(t, &res)
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], `"w2"`) || !strings.Contains(res.Warnings[0], `group "g"`) {
		t.Errorf("draining the last worker of g warned %q, want one warning naming w2 and group g", res.Warnings)
	}
	if !workers(t, url)["w2"].Drained {
		t.Error("the drain that warned did not happen")
	}
	// Only one worker: ?id= filters.
	var one wire.WorkerList
	do(t, "GET", url+"/v1/workers?id=w2", "").decode(t, &one)
	if len(one.Workers) != 1 || one.Workers[0].ID != "w2" {
		t.Errorf("GET /v1/workers?id=w2 listed %+v", one.Workers)
	}
}

// A worker's reports of load ride on its renewals: the group view, read
// on the leader, shows each key's decayed average, and each worker's sum
// of its keys' loads, reported total and announced capacity. Loads outside
// [0, wire.MaxLoad] are refused naming the field.
func TestWorkerLoadReportsShowInTheGroupView(t *testing.T) {
	c := startClusterWith(t, 1, inproc.Options{TCP: true, Gossip: true, Serve: serveAPI})
	url := c.leader().url
	do(t, "PUT", url+"/v1/groups/g", `{"keys":["g-1","g-2"]}`).wantStatus(t, "put group", 200)
	w := runWorkerAs(t, c, "g", "", worker.WithWorkerID("w1"), worker.WithLoadCapacity(100))
	harness.WaitFor(t, 20*time.Second, func() error {
		if n := len(w.Keys()); n != 2 {
			return fmt.Errorf("the worker holds %d keys, want 2", n)
		}
		return nil
	})
	for key, load := range map[string]float64{"g-1": 10, "g-2": 30} {
		if err := w.ReportLoad(key, load); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.ReportTotalLoad(55); err != nil {
		t.Fatal(err)
	}
	harness.WaitFor(t, 20*time.Second, func() error {
		var g wire.Group
		do(t, "GET", url+"/v1/groups/g", "").decode(t, &g)
		for _, k := range g.Keys {
			want := map[string]float64{"g-1": 10, "g-2": 30}[k.Key]
			if k.Load == nil || *k.Load != want {
				return fmt.Errorf("key %s: load %v, want %v", k.Key, fmtLoad(k.Load), want)
			}
		}
		if len(g.Workers) != 1 {
			return fmt.Errorf("%d workers, want 1", len(g.Workers))
		}
		gw := g.Workers[0]
		if gw.LoadCapacity != 100 || gw.KeyLoad == nil || *gw.KeyLoad != 40 || gw.Load == nil || *gw.Load != 55 {
			return fmt.Errorf("worker: capacity %v, key load %v, load %v; want 100, 40, 55", gw.LoadCapacity, fmtLoad(gw.KeyLoad), fmtLoad(gw.Load))
		}
		return nil
	})

	if err := w.ReportLoad("g-1", -1); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("ReportLoad(-1) = %v, want ErrInvalid", err)
	}
	if err := w.ReportLoad("g-9", 1); !errors.Is(err, client.ErrInvalid) {
		t.Errorf("ReportLoad of a key the worker does not own = %v, want ErrInvalid", err)
	}
	l := acquire(t, c.leader(), "k", "h")
	for _, tc := range []struct{ body, field string }{
		{fmt.Sprintf(`{"holder":"h","secret":%q,"leases":[{"key":"k","token":%d,"load":-1}]}`, l.Secret, l.Token), "leases[0].load"},
		{fmt.Sprintf(`{"holder":"h","secret":%q,"leases":[{"key":"k","token":%d}],"load":2e15}`, l.Secret, l.Token), "load"},
	} {
		r := do(t, "POST", url+"/v1/renew", tc.body)
		r.wantStatus(t, "renewal reporting a load out of range", 400)
		if e := r.apiErr(t); e.Field != tc.field || !strings.Contains(e.Message, "outside") {
			t.Errorf("%s: %+v, want field %q and the rule", tc.body, e, tc.field)
		}
	}
}

func fmtLoad(p *float64) string {
	if p == nil {
		return "none"
	}
	return fmt.Sprint(*p)
}

// A group balanced by load, with live workers: the worker that holds the
// hot key (100 against 1 for each other key) is given nothing else, since
// every light key it gives away lowers its load; the group view shows the
// balance.
func TestLiveWorkersBalanceByLoad(t *testing.T) {
	c := startClusterWith(t, 1, inproc.Options{TCP: true, Gossip: true, Serve: serveAPI})
	url := c.leader().url
	do(t, "PUT", url+"/v1/groups/g", `{"prefix":"g-","count":8}`).wantStatus(t, "put group", 200)
	var ws []*worker.Worker
	for _, id := range []string{"w1", "w2"} {
		ws = append(ws, runWorkerAs(t, c, "g", "", worker.WithWorkerID(id)))
	}
	harness.WaitFor(t, 20*time.Second, func() error {
		if n := len(ws[0].Keys()) + len(ws[1].Keys()); n != 8 || len(ws[0].Keys()) == 0 || len(ws[1].Keys()) == 0 {
			return fmt.Errorf("the workers hold %v and %v, want all 8 keys over both", ws[0].Keys(), ws[1].Keys())
		}
		return nil
	})
	// Each worker reports the loads of the keys it holds, as they move.
	stop := make(chan struct{})
	reported := make(chan struct{})
	go func() {
		defer close(reported)
		for {
			for _, w := range ws {
				for _, k := range w.Keys() {
					load := 1.0
					if k == "g-0" {
						load = 100
					}
					w.ReportLoad(k, load) // fails only for a key that just moved away
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	defer func() { close(stop); <-reported }()
	var b wire.GroupBalance
	r := do(t, "PUT", url+"/v1/groups/g/balance", `{"by":"load","move_interval":"1s","move_budget":8}`)
	r.wantStatus(t, "balance by load", 200)
	r.decode(t, &b)
	if b.By != "load" || b.Imbalance != 1.2 || b.MoveBudget == nil || *b.MoveBudget != 8 || b.MoveInterval != "1s" {
		t.Errorf("balance answered %+v, want by load, imbalance 1.2 (the default), budget 8, interval 1s", b)
	}
	harness.WaitFor(t, 30*time.Second, func() error {
		var g wire.Group
		do(t, "GET", url+"/v1/groups/g", "").decode(t, &g)
		hot := ""
		per := map[string][]string{}
		for _, k := range g.Keys {
			per[k.Target] = append(per[k.Target], k.Key)
			if k.Key == "g-0" {
				hot = k.Target
			}
		}
		if hot == "" || len(per[hot]) != 1 || plannedKeys(per) != 8 {
			return fmt.Errorf("plan by worker %v: want g-0 alone on its worker and the seven others on the other", per)
		}
		if g.Balance == nil || g.Balance.By != "load" {
			return fmt.Errorf("the group view shows balance %+v, want by load", g.Balance)
		}
		return nil
	})
}

// plannedKeys counts the keys that the plan gives a worker.
func plannedKeys(per map[string][]string) int {
	n := 0
	for w, ks := range per {
		if w != "" {
			n += len(ks)
		}
	}
	return n
}

// A renewal of one lease (POST /v1/renew/{key}, as the Python client
// renews) carries the key's load as a bulk renewal does; a load out of
// range is refused naming the field, and a release refuses a load.
func TestSingleRenewalReportsALoad(t *testing.T) {
	c := startClusterWith(t, 1, inproc.Options{TCP: true, Serve: serveAPI})
	url := c.leader().url
	do(t, "PUT", url+"/v1/groups/g", `{"keys":["k"]}`).wantStatus(t, "put group", 200)
	l := acquire(t, c.leader(), "k", "h")
	renew := func(load string) reply {
		return do(t, "POST", url+"/v1/renew/k", fmt.Sprintf(`{"holder":"h","token":%d,"secret":%q,"load":%s}`, l.Token, l.Secret, load))
	}
	renew("12.5").wantStatus(t, "renewal with a load", 200)
	var g wire.Group
	do(t, "GET", url+"/v1/groups/g", "").decode(t, &g)
	if len(g.Keys) != 1 || g.Keys[0].Load == nil || *g.Keys[0].Load != 12.5 {
		t.Errorf("group view keys %+v, want k with load 12.5", g.Keys)
	}
	r := renew("-1")
	r.wantStatus(t, "renewal with a negative load", 400)
	if e := r.apiErr(t); e.Field != "load" {
		t.Errorf("negative load: %+v, want field load", e)
	}
	r = do(t, "DELETE", url+"/v1/leases/k", fmt.Sprintf(`{"holder":"h","token":%d,"secret":%q,"load":1}`, l.Token, l.Secret))
	r.wantStatus(t, "release with a load", 400)
	if e := r.apiErr(t); e.Field != "load" {
		t.Errorf("release with a load: %+v, want field load", e)
	}
}
