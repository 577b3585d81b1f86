package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

func TestGroupCommands(t *testing.T) {
	summary := map[string]any{"name": "partitions", "keys": 4, "assigned": 2, "max_per_worker": 2, "modify_index": 9}
	group := map[string]any{"name": "partitions", "max_per_worker": 2,
		"keys": []any{
			map[string]any{"key": "partitions/0", "target": "w1", "preparing": "w2", "holder": "w1", "token": 7, "state": "held", "load": 12.5},
			map[string]any{"key": "partitions/1", "state": "free", "disabled": true},
		},
		"workers": []any{map[string]any{"id": "w1", "status": "alive", "targets": 1, "holds": 1, "key_load": 12.5, "load": 20, "load_capacity": 300}},
		"stuck":   []any{"w9"}, "stuck_grace": "45s", "min_workers": 3,
		"balance": map[string]any{"by": "load", "imbalance": 1.2, "move_budget": 16, "move_interval": "30s"},
	}
	tests := []requestCase{
		{"create from a prefix", []string{"groups", "create", "partitions", "-prefix", "partitions/", "-count", "4", "-max-per-worker", "2"}, 200, summary,
			"PUT", "/v1/groups/partitions", `{"prefix":"partitions/","count":4,"max_per_worker":2}`, []string{"Group partitions: 4 keys, 2 assigned, max per worker 2"}},
		{"create with stuck grace and min workers", []string{"groups", "create", "partitions", "-prefix", "partitions/", "-count", "4", "-stuck-grace", "45s", "-min-workers", "3"}, 200, summary,
			"PUT", "/v1/groups/partitions", `{"prefix":"partitions/","count":4,"stuck_grace":"45s","min_workers":3}`, []string{"Group partitions"}},
		{"create from keys", []string{"groups", "create", "scenes", "-keys", "scene-01,scene-02"}, 200, summary,
			"PUT", "/v1/groups/scenes", `{"keys":["scene-01","scene-02"]}`, []string{"Group partitions"}},
		{"create from keys with empty items", []string{"groups", "create", "scenes", "-keys", " scene-01,,scene-02, "}, 200, summary,
			"PUT", "/v1/groups/scenes", `{"keys":["scene-01","scene-02"]}`, []string{"Group partitions"}},
		// An empty list names no key; it is not read as an address list
		// that falls back to the default server address.
		{"create from a list of no keys", []string{"groups", "create", "scenes", "-keys", ","}, 200, summary,
			"PUT", "/v1/groups/scenes", `{}`, []string{"Group partitions"}},
		{"get", []string{"groups", "get", "partitions"}, 200, group,
			"GET", "/v1/groups/partitions", "", []string{"partitions/0", "w1 (w2 preparing)", "7", "held", "disabled", "WORKER", "alive", "STUCK", "LOAD CAPACITY", "12.5", "300", "Stuck workers: w9", "Stuck grace: 45s; min workers: 3",
				"Placement: balanced by load, imbalance 1.2, at most 16 moves per 30s"}},
		{"list", []string{"groups", "list"}, 200, map[string]any{"groups": []any{summary}},
			"GET", "/v1/groups", "", []string{"NAME", "partitions", "4"}},
		{"add keys", []string{"groups", "add-keys", "partitions", "a", "b"}, 200, summary,
			"POST", "/v1/groups/partitions/keys", `{"add":["a","b"],"remove":null}`, []string{"Group partitions"}},
		{"set keys", []string{"groups", "set-keys", "sessions", "s-2", "s-1"}, 200, summary,
			"PUT", "/v1/groups/sessions/keys", `{"keys":["s-2","s-1"]}`, []string{"Group partitions"}},
		{"max per worker", []string{"groups", "max-per-worker", "partitions", "3"}, 200, summary,
			"PUT", "/v1/groups/partitions/max-per-worker", `{"max_per_worker":3}`, []string{"Group partitions"}},
		{"balance by load", []string{"groups", "balance", "partitions", "-by", "load", "-imbalance", "1.5", "-move-budget", "0", "-weight", "partitions/3=2.5"}, 200,
			map[string]any{"by": "load", "imbalance": 1.5, "move_budget": 0, "move_interval": "30s", "weights": map[string]any{"partitions/3": 2.5}},
			"PUT", "/v1/groups/partitions/balance", `{"by":"load","imbalance":1.5,"move_budget":0,"weights":{"partitions/3":2.5}}`,
			[]string{"Group partitions: balanced by load, imbalance 1.5, at most 0 moves per 30s, 1 weights set"}},
		{"balance by count", []string{"groups", "balance", "partitions", "-by", "keys"}, 200, map[string]any{"by": "keys"},
			"PUT", "/v1/groups/partitions/balance", `{"by":"keys"}`, []string{"Group partitions: balanced by key count"}},
		{"availability budget", []string{"groups", "balance", "partitions", "-by", "keys", "-max-moving", "4"}, 200, map[string]any{"by": "keys", "max_moving": 4},
			"PUT", "/v1/groups/partitions/balance", `{"by":"keys","max_moving":4}`, []string{"Group partitions: balanced by key count, at most 4 keys moving at once"}},
		{"assignment", []string{"groups", "assignment", "partitions", "-worker", "w1"}, 200, map[string]any{"assignment": map[string]string{"partitions/0": "w1"}, "index": 3},
			"GET", "/v1/groups/partitions/assignment", "", []string{"partitions/0", "w1"}},
		{"drain", []string{"workers", "drain", "w1"}, 204, nil,
			"POST", "/v1/workers/w1/drain", `{"draining":true}`, []string{"Worker w1: draining=true"}},
		{"undrain", []string{"workers", "undrain", "w1"}, 204, nil,
			"POST", "/v1/workers/w1/drain", `{"draining":false}`, []string{"draining=false"}},
	}
	runRequestCases(t, tests)
}

// keys disable|enable|prohibit|allow send one atomic edit each: no read
// of the controls, no write-back that could undo another operator's edit.
func TestKeysEditsAreAtomic(t *testing.T) {
	for _, tc := range []struct {
		args []string
		body string
	}{
		{[]string{"disable", "scene-01"}, `{"disabled":true}`},
		{[]string{"enable", "scene-01"}, `{"disabled":false}`},
		{[]string{"prohibit", "scene-01", "t9"}, `{"prohibit":["t9"]}`},
		{[]string{"allow", "scene-01", "t9"}, `{"allow":["t9"]}`},
	} {
		t.Run(tc.args[0], func(t *testing.T) {
			srv := answering(t, 200, map[string]any{"key": "scene-01", "disabled": true, "prohibited": []string{"t8"}})
			got := mustRunCLI(t, append(append([]string{"keys"}, tc.args...), "-http-addr", srv.URL)...)
			req := srv.only(t)
			if req.Method != http.MethodPatch || req.Path != "/v1/controls/scene-01" || req.Body != tc.body {
				t.Errorf("request = %s %s %q, want PATCH /v1/controls/scene-01 %q", req.Method, req.Path, req.Body, tc.body)
			}
			if want := "Key scene-01: disabled=true prohibited=[t8]"; !strings.Contains(got.stdout, want) {
				t.Errorf("stdout = %q, want the controls the server answered: %q", got.stdout, want)
			}
		})
	}
}

func TestGroupsCreateReplaceAndCAS(t *testing.T) {
	summary := map[string]any{"name": "g", "keys": 1, "assigned": 0, "max_per_worker": 0, "modify_index": 9}
	for _, tc := range []struct {
		name  string
		args  []string
		query string
	}{
		{"create only", nil, "cas=0"},
		{"replace", []string{"-replace"}, "replace=true"},
		{"cas", []string{"-cas", "9"}, "cas=9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := answering(t, 200, summary)
			args := append([]string{"groups", "create", "g", "-keys", "a"}, tc.args...)
			mustRunCLI(t, append(args, "-http-addr", srv.URL)...)
			if req := srv.only(t); req.Method != "PUT" || req.Query.Encode() != tc.query {
				t.Errorf("request = %s ?%s, want PUT ?%s", req.Method, req.Query.Encode(), tc.query)
			}
		})
	}
	t.Run("an existing group is not replaced without -replace", func(t *testing.T) {
		srv := answering(t, 409, map[string]any{"error": "cas_failed", "message": "group \"g\" exists", "group": summary})
		got := runCLI(t, "groups", "create", "g", "-keys", "a", "-http-addr", srv.URL)
		if got.code != exitError || !strings.Contains(got.stderr, "cas_failed") || !strings.Contains(got.stderr, "-replace") {
			t.Errorf("exit %d, stderr %q; want an error that names cas_failed and -replace", got.code, got.stderr)
		}
		srv.only(t) // not retried
	})
	t.Run("-replace and -cas together", func(t *testing.T) {
		got := runCLI(t, "groups", "create", "g", "-keys", "a", "-replace", "-cas", "3", "-http-addr", "127.0.0.1:1")
		if got.code == exitOK || !strings.Contains(got.stderr, "either -replace or -cas") {
			t.Errorf("exit %d, stderr %q; want a usage error", got.code, got.stderr)
		}
	})
}

// keys disable -force asks, in one atomic edit, for the holder's lease to
// be freed at once, and prints the lease the change ended.
func TestKeysDisableForcePrintsEnded(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			writeJSON(w, 200, map[string]any{"key": "scene-01", "disabled": false, "prohibited": []string{}})
			return
		}
		writeJSON(w, 200, map[string]any{"key": "scene-01", "disabled": true, "prohibited": []string{},
			"ended": []map[string]any{{"key": "scene-01", "holder": "t1", "token": 7, "reason": "disabled", "forced": true, "frees_in": "0s"}}})
	})
	got := mustRunCLI(t, "keys", "disable", "scene-01", "-force", "-http-addr", srv.URL)
	srv.mu.Lock()
	var query string
	for _, r := range srv.reqs {
		if r.Method == http.MethodPatch {
			query = r.Query.Encode()
		}
	}
	srv.mu.Unlock()
	if query != "force=true" {
		t.Errorf("PATCH query %q, want force=true", query)
	}
	if !strings.Contains(got.stdout, "Ended scene-01 (holder t1, token 7): freed now (forced") {
		t.Errorf("stdout %q, want the forced end of t1's lease", got.stdout)
	}
}

// `groups get` lists keys the way people count (partitions/2 before
// partitions/10), although the API answers them in byte order.
func TestGroupsGetListsKeysInCountingOrder(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"name": "partitions", "key_count": 3, "keys": []any{
			map[string]any{"key": "partitions/1", "state": "free"},
			map[string]any{"key": "partitions/10", "state": "free"},
			map[string]any{"key": "partitions/2", "state": "free"},
		}, "workers": []any{}})
	})
	got := mustRunCLI(t, "groups", "get", "partitions", "-http-addr", srv.URL)
	one, two, ten := strings.Index(got.stdout, "partitions/1 "), strings.Index(got.stdout, "partitions/2 "), strings.Index(got.stdout, "partitions/10 ")
	if one < 0 || two < 0 || ten < 0 || !(one < two && two < ten) {
		t.Errorf("groups get lists the keys out of counting order:\n%s", got.stdout)
	}
}

// groups set-keys -from reads one key per line; a file without keys
// empties the group ([] sent, not null); without keys or -from, or with
// both, it is a usage error that sends nothing.
func TestGroupsSetKeysFromAFile(t *testing.T) {
	summary := map[string]any{"name": "sessions", "keys": 2, "modify_index": 9}
	dir := t.TempDir()
	for _, tt := range []struct {
		name, file, body string
	}{
		{"keys", "s-1\n\n  s-2  \n", `{"keys":["s-1","s-2"]}`},
		{"no keys", "\n", `{"keys":[]}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := answering(t, 200, summary)
			path := writeFile(t, filepath.Join(dir, tt.name), tt.file)
			mustRunCLI(t, "groups", "set-keys", "sessions", "-from", path, "-http-addr", srv.URL)
			srv.only(t).want(t, "PUT", "/v1/groups/sessions/keys", tt.body)
		})
	}
	for _, args := range [][]string{{"sessions"}, {"sessions", "s-1", "-from", filepath.Join(dir, "keys")}} {
		srv := answering(t, 200, summary)
		got := runCLI(t, append(append([]string{"groups", "set-keys"}, args...), "-http-addr", srv.URL)...)
		if got.code != exitUsage || !strings.Contains(got.stderr, "-from FILE") {
			t.Errorf("set-keys %q: exit %d, stderr %q; want a usage error naming -from FILE", args, got.code, got.stderr)
		}
		srv.mu.Lock()
		if n := len(srv.reqs); n != 0 {
			t.Errorf("set-keys %q sent %d requests, want none", args, n)
		}
		srv.mu.Unlock()
	}
}

// groups balance replaces the group's balance, so -by must be said: a
// group by load does not go back to counting keys by omission.
func TestGroupBalanceNeedsBy(t *testing.T) {
	srv := answering(t, 200, map[string]any{"by": "keys"})
	got := runCLI(t, "groups", "balance", "partitions", "-max-moving", "4", "-http-addr", srv.URL)
	if got.code != exitUsage || !strings.Contains(got.stderr, "-by keys or -by load is required") {
		t.Errorf("exit %d, stderr %q; want %d and the rule", got.code, got.stderr, exitUsage)
	}
}
