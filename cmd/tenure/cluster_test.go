package main

import (
	"strings"
	"testing"
)

func TestClusterCommands(t *testing.T) {
	status := map[string]any{
		"node_id": "n1", "role": "leader", "leader_id": "n1", "leader_http_addr": "10.0.0.1:7500",
		"term": 4, "last_log_index": 90, "commit_index": 90, "applied_index": 90, "last_contact": "0s", "ready": true,
		"servers":           threeVoters(true),
		"failure_tolerance": 1,
	}
	members := map[string]any{"members": []any{
		map[string]any{"name": "n1", "addr": "10.0.0.1:7946", "status": "alive", "role": "server"},
		map[string]any{"name": "w1", "addr": "10.0.0.9:7946", "status": "suspect", "role": "worker", "meta": map[string]any{"capacity": 8, "groups": []string{"scenes"}}},
	}}
	tests := []requestCase{
		{"status", []string{"status"}, 200, status, "GET", "/v1/status", "",
			[]string{"Node:", "n1", "Term:", "4", "RAFT ADDRESS", "10.0.0.2:7501", "HEALTHY", "Failure tolerance:"}},
		{"status json", []string{"status", "-json"}, 200, status, "GET", "/v1/status", "",
			[]string{`"node_id": "n1"`, `"last_contact": "0s"`}},
		{"members", []string{"members"}, 200, members, "GET", "/v1/members", "",
			[]string{"NAME", "w1", "suspect", "capacity=8,groups=[scenes]"}},
		{"members json", []string{"members", "-json"}, 200, members, "GET", "/v1/members", "",
			[]string{`"members"`, `"status": "suspect"`}},
		{"snapshot take", []string{"snapshot", "take"}, 200, map[string]any{"id": "4-90-1", "index": 90, "term": 4, "size": 2048},
			"POST", "/v1/operator/snapshot", "", []string{"Snapshot:", "4-90-1", "Index:", "90", "Term:", "2048 bytes"}},
		{"remove server", []string{"operator", "remove-server", "n3"}, 200, map[string]any{"id": "n3", "voters": 3, "readmit": "to bring n3 back, start it again with its data dir"},
			"DELETE", "/v1/operator/servers/n3", "", []string{"Removed server n3 (3 voters left)", "To bring it back: start it again with its data dir"}},
		{"remove server with force", []string{"operator", "remove-server", "-force", "n3"}, 200, map[string]any{"id": "n3", "voters": 2, "forced": []string{"removing voter \"n3\" leaves 2 voters"}, "readmit": "to bring n3 back, x"},
			"DELETE", "/v1/operator/servers/n3", "", []string{"Removed server n3 (2 voters left)", "Warning: forced past a rule: removing voter \"n3\" leaves 2 voters"}},
		{"readmit server", []string{"operator", "readmit-server", "n3"}, 200, map[string]any{"id": "n3", "raft_addr": "10.0.0.3:7501"},
			"POST", "/v1/operator/servers/n3/readmit", "", []string{"Server n3 at 10.0.0.3:7501", "non-voter"}},
		{"transfer leader to id", []string{"operator", "transfer-leader", "n2"}, 200, map[string]string{"leader_id": "n2"},
			"POST", "/v1/operator/transfer-leader", `{"id":"n2"}`, []string{"Leadership transferred to n2"}},
		{"transfer leader anywhere", []string{"operator", "transfer-leader", "-json"}, 200, map[string]string{"leader_id": "n3"},
			"POST", "/v1/operator/transfer-leader", `{}`, []string{`"leader_id": "n3"`}},
	}
	runRequestCases(t, tests)
}

func TestRemoveUnknownServerFails(t *testing.T) {
	srv := answering(t, 404, map[string]string{"error": "not_found", "message": "no server n9"})
	got := runCLI(t, "operator", "remove-server", "n9", "-http-addr", srv.URL)
	if got.code != exitError || got.stderr != "error: not_found: no server n9\n" {
		t.Errorf("remove-server n9 = %d, stderr %q; want 1 and the not_found error", got.code, got.stderr)
	}
}

// A healthy follower is ready, as GET /readyz says, although the API's
// ready field is true only on the established leader; one that is behind
// or knows no leader is not.
func TestStatusReadyIsReadyzsAnswer(t *testing.T) {
	follower := func(leader, notReady string) map[string]any {
		return map[string]any{"node_id": "n2", "role": "follower", "leader_id": leader, "term": 4, "last_contact": "5ms", "ready": false,
			"not_ready": notReady, "servers": threeVoters(true), "failure_tolerance": 1}
	}
	for _, tt := range []struct {
		name   string
		answer map[string]any
		want   string
	}{
		{"healthy follower", follower("n1", ""), "true"},
		{"follower behind", follower("n1", "applied index 3 is 900 entries behind"), "false"},
		{"no leader", follower("", ""), "false"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := answering(t, 200, tt.answer)
			got := runCLI(t, "status", "-http-addr", srv.URL)
			for _, line := range strings.Split(got.stdout, "\n") {
				if f := strings.Fields(line); len(f) == 2 && f[0] == "Ready:" {
					if f[1] != tt.want {
						t.Errorf("Ready: %s, want %s:\n%s", f[1], tt.want, got.stdout)
					}
					return
				}
			}
			t.Errorf("no Ready: line:\n%s", got.stdout)
		})
	}
}

// threeVoters is the servers of a status: n1 (the leader), n2 and n3,
// n3 healthy or not.
func threeVoters(n3Healthy bool) []any {
	return []any{
		map[string]any{"id": "n1", "raft_addr": "10.0.0.1:7501", "http_addr": "10.0.0.1:7500", "suffrage": "voter", "leader": true, "healthy": true},
		map[string]any{"id": "n2", "raft_addr": "10.0.0.2:7501", "http_addr": "10.0.0.2:7500", "suffrage": "voter", "leader": false, "healthy": true},
		map[string]any{"id": "n3", "raft_addr": "10.0.0.3:7501", "http_addr": "10.0.0.3:7500", "suffrage": "voter", "leader": false, "healthy": n3Healthy},
	}
}

// When one more voter that fails would stop every write, `tenure status`
// prints the failure tolerance and each server's health, names the
// servers that are not healthy on standard error, and exits non-zero,
// also with -json. A single -dev server tolerates no failure by design:
// it passes while it is healthy.
func TestStatusWithoutFailureToleranceFails(t *testing.T) {
	leader := func(servers []any, tolerance int) map[string]any {
		return map[string]any{"node_id": "n1", "role": "leader", "leader_id": "n1", "term": 4, "last_contact": "0s", "ready": true,
			"servers": servers, "failure_tolerance": tolerance}
	}
	dev := []any{map[string]any{"id": "dev", "raft_addr": "127.0.0.1:7501", "suffrage": "voter", "leader": true, "healthy": true}}
	for _, tt := range []struct {
		name   string
		answer map[string]any
		args   []string
		code   int
		out    []string
		errOut string
	}{
		{"a voter down", leader(threeVoters(false), 0), []string{"status"}, exitError,
			[]string{"Failure tolerance:", "0", "HEALTHY", "false"}, "error: failure tolerance 0: one more voter that fails stops every write (as n1 judges it; not healthy: n3)"},
		{"a voter down json", leader(threeVoters(false), 0), []string{"status", "-json"}, exitError,
			[]string{`"failure_tolerance": 0`, `"healthy": false`}, "not healthy: n3"},
		{"every voter healthy", leader(threeVoters(true), 1), []string{"status"}, exitOK,
			[]string{"Failure tolerance:", "1"}, ""},
		{"one -dev server", leader(dev, 0), []string{"status"}, exitOK,
			[]string{"Failure tolerance:", "0"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := answering(t, 200, tt.answer)
			got := runCLI(t, append(tt.args, "-http-addr", srv.URL)...)
			if got.code != tt.code {
				t.Errorf("exit code %d, want %d (stderr %q)", got.code, tt.code, got.stderr)
			}
			for _, want := range tt.out {
				if !strings.Contains(got.stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, got.stdout)
				}
			}
			if tt.errOut == "" && got.stderr != "" || !strings.Contains(got.stderr, tt.errOut) {
				t.Errorf("stderr %q, want %q in it", got.stderr, tt.errOut)
			}
		})
	}
}

// With no leader, `tenure status` says that the cluster cannot serve, and
// exits non-zero, also with -json: a script must not read "Role:
// candidate" as healthy.
func TestStatusWithoutLeaderFails(t *testing.T) {
	never := map[string]any{"node_id": "n2", "role": "follower", "last_contact": "never", "term": 3}
	candidate := map[string]any{"node_id": "n1", "role": "candidate", "last_contact": "12.5s", "term": 9}
	for _, tt := range []struct {
		name   string
		answer map[string]any
		args   []string
		out    []string
		errOut string
	}{
		{"never heard from a leader", never, []string{"status"}, []string{"Last contact:", "never", "Leader:", "none"}, "no leader: n2 (follower in term 3) has never heard from a leader"},
		{"candidate", candidate, []string{"status"}, []string{"Role:", "candidate"}, "no leader: n1 (candidate in term 9) last heard from a leader 12.5s ago"},
		{"candidate json", candidate, []string{"status", "-json"}, []string{`"role": "candidate"`}, "no leader: n1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := answering(t, 200, tt.answer)
			got := runCLI(t, append(tt.args, "-http-addr", srv.URL)...)
			if got.code != exitError {
				t.Errorf("exit code %d, want %d", got.code, exitError)
			}
			for _, want := range tt.out {
				if !strings.Contains(got.stdout, want) {
					t.Errorf("output lacks %q:\n%s", want, got.stdout)
				}
			}
			if !strings.Contains(got.stderr, tt.errOut) || !strings.Contains(got.stderr, "quorum") {
				t.Errorf("stderr %q, want %q and a word on the quorum", got.stderr, tt.errOut)
			}
		})
	}
}
