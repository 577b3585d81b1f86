package httpapi

import (
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
)

// The placement health report names what is wrong, from any node (a
// follower forwards it to the leader), and the metrics count the group's
// keys by state.
func TestPlacementHealthAndMetrics(t *testing.T) {
	c := startCluster(t, 3)
	l, f := c.follower()
	do(t, http.MethodPut, l.url+"/v1/groups/g", `{"prefix":"g-","count":3,"min_workers":2,"stuck_grace":"1m"}`).wantStatus(t, "put group", 200)
	acquire(t, l, "g-0", "someone")
	acquire(t, l, "other", "h1")

	var group client.Group
	r := do(t, http.MethodGet, l.url+"/v1/groups/g", "")
	r.wantStatus(t, "get group", 200)
	r.decode(t, &group)
	if group.StuckGrace != "1m0s" || group.MinWorkers != 2 {
		t.Errorf("group view: stuck_grace %q, min_workers %d; want 1m0s, 2", group.StuckGrace, group.MinWorkers)
	}

	var h client.PlacementHealth
	r = do(t, http.MethodGet, f.url+"/v1/health/placement", "")
	r.wantStatus(t, "placement health", 200)
	r.decode(t, &h)
	if h.OK {
		t.Errorf("ok = true with a group below its minimum: %+v", h)
	}
	if len(h.BelowMin) != 1 || h.BelowMin[0] != (client.GroupBelowMin{Group: "g", Workers: 0, MinWorkers: 2}) {
		t.Errorf("below_min_workers = %+v, want g with 0 of 2", h.BelowMin)
	}
	var unowned []string
	for _, k := range h.Unowned {
		unowned = append(unowned, k.Key)
		if k.Overdue {
			t.Errorf("%s overdue before its group's grace of 1m", k.Key)
		}
	}
	if len(unowned) != 2 || unowned[0] != "g-1" || unowned[1] != "g-2" {
		t.Errorf("unowned = %v, want [g-1 g-2]", unowned)
	}
	if len(h.Stale) != 0 {
		t.Errorf("stale leases = %+v right after they were acquired", h.Stale)
	}

	// A lease not renewed for longer than the threshold is stale.
	time.Sleep(20 * time.Millisecond)
	r = do(t, http.MethodGet, l.url+"/v1/health/placement?threshold=10ms", "")
	r.wantStatus(t, "placement health with a threshold", 200)
	h = client.PlacementHealth{}
	r.decode(t, &h)
	if len(h.Stale) != 2 || h.Stale[0].Key != "g-0" || h.Stale[0].Holder != "someone" || h.Stale[1].Key != "other" || h.Threshold != "10ms" {
		t.Errorf("stale leases = %+v (threshold %q), want g-0 and other", h.Stale, h.Threshold)
	}

	r = do(t, http.MethodGet, l.url+"/metrics", "")
	r.wantStatus(t, "metrics", 200)
	for _, want := range []string{
		`tenure_group_keys{group="g",state="owned_by_other"} 1`,
		`tenure_group_keys{group="g",state="owned_by_target"} 0`,
		`tenure_group_keys{group="g",state="unowned"} 2`,
		`tenure_group_stuck_workers{group="g"} 0`,
		`tenure_group_draining_workers{group="g"} 0`,
		`tenure_group_workers{group="g"} 0`,             // no worker serves g
		`tenure_group_max_keys_per_worker{group="g"} 0`, // no cap set
		`tenure_group_busiest_worker_keys{group="g"} 1`, // "someone" holds g-0
	} {
		if !regexp.MustCompile("(?m)^" + regexp.QuoteMeta(want) + "$").Match(r.body) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if !regexp.MustCompile(`(?m)^tenure_group_oldest_unowned_seconds\{group="g"\} [0-9.e+-]+$`).Match(r.body) {
		t.Errorf("the leader's metrics lack tenure_group_oldest_unowned_seconds for g")
	}
}
