package main

import (
	"encoding/json"
	"net/http"
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
			srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, tt.status, tt.answer)
			})
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
