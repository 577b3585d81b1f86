package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
)

// leases stale prints the report and says by its exit code whether
// something is wrong (1) or it could not ask (2), for cron and monitoring.
func TestLeasesStale(t *testing.T) {
	bad := client.PlacementHealth{
		Unowned:  []client.UnownedKey{{Group: "partitions", Key: "partitions/3", Target: "w2", UnownedFor: "41s", Overdue: true}},
		Stuck:    []client.StuckWorker{{Group: "partitions", Worker: "w2", Since: "2026-01-02T03:04:05Z", StuckFor: "21s", QuarantineLeft: "9s"}},
		BelowMin: []client.GroupBelowMin{{Group: "partitions", Workers: 1, MinWorkers: 3}},
		Stale:    []client.StaleLease{{Key: "elections/scheduler", Holder: "sched-1", Token: 7, TTL: "15s", SinceRenewal: "12s"}},
	}
	good := client.PlacementHealth{OK: true, Unowned: []client.UnownedKey{}, Stuck: []client.StuckWorker{},
		BelowMin: []client.GroupBelowMin{}, Stale: []client.StaleLease{}}
	tests := []struct {
		name      string
		args      []string
		status    int
		answer    any
		wantCode  int
		wantQuery string
		wantOut   []string
	}{
		{"all well", nil, 200, good, exitOK, "", []string{"ok: every key is owned"}},
		{"problems", []string{"-threshold", "10s"}, 200, bad, exitError, "10s",
			[]string{"partitions/3", "w2", "41s", "STUCK WORKER", "21s", "GROUP BELOW MIN", "elections/scheduler", "sched-1", "12s", "problems found"}},
		{"problems json", []string{"-json"}, 200, bad, exitError, "", []string{`"below_min_workers"`}},
		{"denied", nil, 403, wire.ErrorBody{Error: wire.CodePermissionDenied, Message: "token lacks read on groups"}, exitUsage, "", nil},
		{"bad threshold", []string{"-threshold", "-1s"}, 200, good, exitUsage, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := answering(t, tt.status, tt.answer)
			args := append([]string{"leases", "stale", "-http-addr", srv.URL}, tt.args...)
			got := runCLI(t, args...)
			if got.code != tt.wantCode {
				t.Fatalf("exit code %d, want %d; stdout %q stderr %q", got.code, tt.wantCode, got.stdout, got.stderr)
			}
			for _, want := range tt.wantOut {
				if !strings.Contains(got.stdout, want) {
					t.Errorf("output lacks %q:\n%s", want, got.stdout)
				}
			}
			if strings.HasSuffix(tt.name, "json") && !json.Valid([]byte(got.stdout)) {
				t.Errorf("-json output is not JSON:\n%s", got.stdout)
			}
			if tt.wantCode == exitUsage && tt.status == 200 {
				return // refused before asking
			}
			srv.mu.Lock()
			defer srv.mu.Unlock()
			if len(srv.reqs) == 0 {
				t.Fatal("no request reached the server")
			}
			req := srv.reqs[0]
			if req.Method != http.MethodGet || req.Path != "/v1/health/placement" || req.Query.Get("threshold") != tt.wantQuery {
				t.Errorf("request = %s %s threshold=%q, want GET /v1/health/placement threshold=%q", req.Method, req.Path, req.Query.Get("threshold"), tt.wantQuery)
			}
		})
	}
}

// unownedKeys returns n unowned, overdue keys of group partitions with no
// target, from partitions/<from>.
func unownedKeys(from, n int) []client.UnownedKey {
	out := make([]client.UnownedKey, n)
	for i := range out {
		out[i] = client.UnownedKey{Group: "partitions", Key: fmt.Sprintf("partitions/%d", from+i), UnownedFor: "2m0s", Overdue: true}
	}
	return out
}

// With one worker of capacity 32 and 1,024 keys, leases stale lists a
// screenful of the unowned keys (every one with -all), ends with the cause
// and exits 1.
func TestLeasesStaleNamesTheCauseOnAScreenful(t *testing.T) {
	h := client.PlacementHealth{
		Unowned:  unownedKeys(32, 992),
		Stuck:    []client.StuckWorker{},
		BelowMin: []client.GroupBelowMin{}, Stale: []client.StaleLease{}, Controlled: []client.ControlledKey{},
		Groups: []client.GroupHealth{{Group: "partitions", Keys: 1024, UnownedKeys: 992, UnplannedKeys: 992,
			LiveWorkers: 1, Workers: 1, Room: 32, RoomPerWorkerMin: 32, RoomPerWorkerMax: 32}},
	}
	srv := answering(t, 200, h)
	tests := []struct {
		name     string
		args     []string
		wantRows int
		wantMore bool
	}{
		{"a screenful", nil, staleRows, true},
		{"all", []string{"-all"}, 992, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCLI(t, append([]string{"leases", "stale", "-http-addr", srv.URL}, tt.args...)...)
			if got.code != exitError {
				t.Fatalf("exit code %d, want %d; stderr %q", got.code, exitError, got.stderr)
			}
			rows := strings.Count(got.stdout, "\npartitions/")
			if rows != tt.wantRows {
				t.Errorf("%d unowned keys listed, want %d:\n%s", rows, tt.wantRows, got.stdout)
			}
			if more := strings.Contains(got.stdout, "972 more unowned keys (-all lists them)"); more != tt.wantMore {
				t.Errorf("says how many more: %t, want %t:\n%s", more, tt.wantMore, got.stdout)
			}
			if lines := strings.Count(got.stdout, "\n"); tt.wantMore && lines > 40 {
				t.Errorf("%d lines, want a screenful (40 at most):\n%s", lines, got.stdout)
			}
			for _, want := range []string{
				"partitions: 992 of 1,024 keys unowned: 1 live worker × max 32 = 32 < 1,024 keys",
				"problems found",
			} {
				if !strings.Contains(got.stdout, want) {
					t.Errorf("output lacks %q:\n%s", want, got.stdout)
				}
			}
		})
	}
}

// The summary names each cause it can tell from the counts, and the keys
// an operator disabled or on which holders are prohibited are listed and
// counted, although they alone are no problem (exit 0).
func TestLeasesStaleSummary(t *testing.T) {
	empty := func() client.PlacementHealth {
		return client.PlacementHealth{OK: true, Unowned: []client.UnownedKey{}, Stuck: []client.StuckWorker{},
			BelowMin: []client.GroupBelowMin{}, Stale: []client.StaleLease{}, Controlled: []client.ControlledKey{}}
	}
	tests := []struct {
		name     string
		edit     func(h *client.PlacementHealth)
		wantCode int
		wantOut  []string
	}{
		{"no worker", func(h *client.PlacementHealth) {
			h.OK, h.Unowned = false, unownedKeys(0, 8)
			h.Groups = []client.GroupHealth{{Group: "partitions", Keys: 8, UnownedKeys: 8, UnplannedKeys: 8}}
		}, exitError, []string{"partitions: 8 of 8 keys unowned: no live worker serves the group"}},
		{"workers held back", func(h *client.PlacementHealth) {
			h.OK, h.Unowned = false, unownedKeys(0, 8)
			h.Groups = []client.GroupHealth{{Group: "partitions", Keys: 8, UnownedKeys: 8, UnplannedKeys: 8,
				LiveWorkers: 3, DrainingWorkers: 1, StuckWorkers: 1, NotAdmittedWorkers: 1}}
		}, exitError, []string{"partitions: 8 of 8 keys unowned: none of 3 live workers may take keys (1 draining, 1 stuck, 1 not admitted)"}},
		{"uneven room and disabled keys", func(h *client.PlacementHealth) {
			h.OK, h.Unowned = false, unownedKeys(0, 1000)
			h.Truncated = true
			h.Groups = []client.GroupHealth{{Group: "partitions", Keys: 2000, DisabledKeys: 2, UnownedKeys: 1970, UnplannedKeys: 1970,
				LiveWorkers: 3, Workers: 2, DrainingWorkers: 1, Room: 28, RoomPerWorkerMin: 8, RoomPerWorkerMax: 20, MaxPerWorker: 20}}
		}, exitError, []string{
			"partitions: 1,970 of 1,998 enabled keys unowned: 2 live workers × max 8 to 20 = 28 < 1,998 keys (held back: 1 draining)",
			"980 more unowned keys (-all lists them; the server sends 1,000 at most)",
			"partitions: 2 disabled keys"}},
		{"targets not taken", func(h *client.PlacementHealth) {
			h.OK, h.Unowned = false, unownedKeys(0, 3)
			h.Stuck = []client.StuckWorker{{Group: "partitions", Worker: "w2", Since: "2026-01-02T03:04:05Z", StuckFor: "21s", QuarantineLeft: "9s"}}
			h.Groups = []client.GroupHealth{{Group: "partitions", Keys: 64, UnownedKeys: 3,
				LiveWorkers: 2, Workers: 1, StuckWorkers: 1, Room: 64, RoomPerWorkerMin: 64, RoomPerWorkerMax: 64}}
		}, exitError, []string{"partitions: 3 of 64 keys unowned: their target workers have not taken them", "partitions: 1 stuck worker"}},
		{"below min and stale", func(h *client.PlacementHealth) {
			h.OK = false
			h.BelowMin = []client.GroupBelowMin{{Group: "partitions", Workers: 1, MinWorkers: 3}}
			h.Stale = []client.StaleLease{{Key: "elections/scheduler", Holder: "sched-1", Token: 7, TTL: "15s", SinceRenewal: "12s"}}
			h.Groups = []client.GroupHealth{{Group: "partitions", Keys: 4, LiveWorkers: 1, Workers: 1, MinWorkers: 3,
				Room: 4, RoomPerWorkerMin: 4, RoomPerWorkerMax: 4}}
		}, exitError, []string{"partitions: 1 live worker may take keys < min 3", "1 lease not renewed within two thirds of its TTL"}},
		{"controls only", func(h *client.PlacementHealth) {
			h.Controlled = []client.ControlledKey{{Group: "partitions", Key: "partitions/7", Disabled: true},
				{Group: "partitions", Key: "partitions/9", Prohibited: []string{"w2", "w3"}}}
			h.Groups = []client.GroupHealth{{Group: "partitions", Keys: 16, DisabledKeys: 1, ProhibitedKeys: 1,
				LiveWorkers: 1, Workers: 1, Room: 15, RoomPerWorkerMin: 15, RoomPerWorkerMax: 15}}
		}, exitOK, []string{"CONTROLLED KEY", "partitions/7", "disabled", "partitions/9", "w2,w3",
			"partitions: 1 disabled key: nobody may acquire it (tenure keys enable KEY)",
			"partitions: 1 key prohibits holders (tenure keys allow KEY HOLDER)", "ok:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := empty()
			tt.edit(&h)
			srv := answering(t, 200, h)
			got := runCLI(t, "leases", "stale", "-http-addr", srv.URL)
			if got.code != tt.wantCode {
				t.Fatalf("exit code %d, want %d; stdout %q stderr %q", got.code, tt.wantCode, got.stdout, got.stderr)
			}
			for _, want := range tt.wantOut {
				if !strings.Contains(got.stdout, want) {
					t.Errorf("output lacks %q:\n%s", want, got.stdout)
				}
			}
		})
	}
}

// Unowned keys are listed the way people count (partitions/2 before
// partitions/10), group by group, whatever order the server sent.
func TestLeasesStaleListsUnownedKeysInCountingOrder(t *testing.T) {
	var h client.PlacementHealth
	for _, k := range []string{"b/10", "b/2", "a/100", "a/20", "a/3"} {
		g, _, _ := strings.Cut(k, "/")
		h.Unowned = append(h.Unowned, client.UnownedKey{Group: g, Key: k, UnownedFor: "1m0s"})
	}
	srv := answering(t, 200, h)
	got := runCLI(t, "leases", "stale", "-http-addr", srv.URL)
	var keys []string
	for _, line := range strings.Split(got.stdout, "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.Contains(f[0], "/") {
			keys = append(keys, f[0])
		}
	}
	if want := []string{"a/3", "a/20", "a/100", "b/2", "b/10"}; !slices.Equal(keys, want) {
		t.Errorf("unowned keys listed as %v, want %v:\n%s", keys, want, got.stdout)
	}
}
