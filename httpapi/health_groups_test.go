package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"regexp"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/worker"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// With one worker of capacity 2 in a group of 8 keys, one disabled and
// one prohibiting a holder, and a minimum of 3 workers, the placement
// health report sums up the group (what names the cause of the unowned
// keys: 1 worker, room 2, 7 enabled keys), lists the controlled keys, and
// the metrics count the controls and the workers against the minimum.
func TestPlacementHealthSumsUpGroupsAndControls(t *testing.T) {
	c := startClusterWith(t, 1, inproc.Options{TCP: true, Gossip: true, Serve: serveAPI, Tweak: func(cfg *cluster.Config) {
		cfg.BalanceSettle = 100 * time.Millisecond
		cfg.BalanceDebounce = 50 * time.Millisecond
	}})
	l := c.leader()
	do(t, http.MethodPut, l.url+"/v1/groups/parts", `{"prefix":"parts/","count":8,"min_workers":3}`).wantStatus(t, "put group", 200)
	do(t, http.MethodPut, l.url+"/v1/controls/parts/7", `{"disabled":true}`).wantStatus(t, "disable parts/7", 200)
	do(t, http.MethodPut, l.url+"/v1/controls/parts/6", `{"prohibited":["w-x"]}`).wantStatus(t, "prohibit on parts/6", 200)

	ctx, cancel := context.WithCancel(context.Background())
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{l.url}
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	w := worker.New(cl, "parts", func(ctx context.Context, key string, token uint64) { <-ctx.Done() },
		worker.WithWorkerID("w-a"), worker.WithCapacity(2), worker.WithWorkerTTL(time.Second),
		worker.WithJoin(c.cluster.GossipAddr(0)))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })

	want := client.GroupHealth{Group: "parts", Keys: 8, DisabledKeys: 1, ProhibitedKeys: 1, UnownedKeys: 5, UnplannedKeys: 5,
		LiveWorkers: 1, Workers: 1, MinWorkers: 3, Room: 2, RoomPerWorkerMin: 2, RoomPerWorkerMax: 2}
	wantCtl := []client.ControlledKey{{Group: "parts", Key: "parts/6", Prohibited: []string{"w-x"}}, {Group: "parts", Key: "parts/7", Disabled: true}}
	series := []*regexp.Regexp{
		regexp.MustCompile(`(?m)^tenure_group_disabled_keys\{group="parts"\} 1$`),
		regexp.MustCompile(`(?m)^tenure_group_prohibited_keys\{group="parts"\} 1$`),
		regexp.MustCompile(`(?m)^tenure_group_min_workers\{group="parts"\} 3$`),
		regexp.MustCompile(`(?m)^tenure_group_eligible_workers\{group="parts"\} 1$`),
	}
	harness.WaitFor(t, 20*time.Second, func() error {
		r, err := send(http.MethodGet, l.url+"/v1/health/placement", "", nil)
		if err != nil {
			return err
		}
		var h client.PlacementHealth
		if err := json.Unmarshal(r.body, &h); err != nil {
			return fmt.Errorf("status %d: %v: %s", r.status, err, r.body)
		}
		if len(h.Groups) != 1 || !reflect.DeepEqual(h.Groups[0], want) {
			return fmt.Errorf("groups = %+v, want [%+v]", h.Groups, want)
		}
		if !reflect.DeepEqual(h.Controlled, wantCtl) {
			return fmt.Errorf("controlled keys = %+v, want %+v", h.Controlled, wantCtl)
		}
		if h.OK || len(h.BelowMin) != 1 {
			return fmt.Errorf("ok %t, below min %+v: want parts below its minimum", h.OK, h.BelowMin)
		}
		m, err := send(http.MethodGet, l.url+"/metrics", "", nil)
		if err != nil {
			return err
		}
		for _, re := range series {
			if !re.Match(m.body) {
				return fmt.Errorf("metrics lack %s", re)
			}
		}
		return nil
	})
}
