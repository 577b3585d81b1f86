package main

import (
	"net/http"
	"strings"
	"testing"
)

func TestGroupCommands(t *testing.T) {
	summary := map[string]any{"name": "partitions", "keys": 4, "assigned": 2, "max_per_worker": 2, "modify_index": 9}
	group := map[string]any{"name": "partitions", "max_per_worker": 2,
		"keys": []any{
			map[string]any{"key": "partitions/0", "target": "w1", "holder": "w1", "token": 7, "state": "held"},
			map[string]any{"key": "partitions/1", "state": "free", "disabled": true},
		},
		"workers": []any{map[string]any{"id": "w1", "status": "alive", "targets": 1, "holds": 1}},
	}
	tests := []requestCase{
		{"create from a prefix", []string{"groups", "create", "partitions", "-prefix", "partitions/", "-count", "4", "-max-per-worker", "2"}, 200, summary,
			"PUT", "/v1/groups/partitions", `{"prefix":"partitions/","count":4,"max_per_worker":2}`, []string{"Group partitions: 4 keys, 2 assigned, max per worker 2"}},
		{"create from keys", []string{"groups", "create", "scenes", "-keys", "scene-01,scene-02"}, 200, summary,
			"PUT", "/v1/groups/scenes", `{"keys":["scene-01","scene-02"]}`, []string{"Group partitions"}},
		{"get", []string{"groups", "get", "partitions"}, 200, group,
			"GET", "/v1/groups/partitions", "", []string{"partitions/0", "w1", "7", "held", "disabled", "WORKER", "alive"}},
		{"list", []string{"groups", "list"}, 200, map[string]any{"groups": []any{summary}},
			"GET", "/v1/groups", "", []string{"NAME", "partitions", "4"}},
		{"add keys", []string{"groups", "add-keys", "partitions", "a", "b"}, 200, summary,
			"POST", "/v1/groups/partitions/keys", `{"add":["a","b"],"remove":null}`, []string{"Group partitions"}},
		{"max per worker", []string{"groups", "max-per-worker", "partitions", "3"}, 200, summary,
			"PUT", "/v1/groups/partitions/max-per-worker", `{"max_per_worker":3}`, []string{"Group partitions"}},
		{"assignment", []string{"groups", "assignment", "partitions", "-worker", "w1"}, 200, map[string]any{"assignment": map[string]string{"partitions/0": "w1"}, "index": 3},
			"GET", "/v1/groups/partitions/assignment", "", []string{"partitions/0", "w1"}},
		{"drain", []string{"workers", "drain", "w1"}, 204, nil,
			"POST", "/v1/workers/w1/drain", `{"draining":true}`, []string{"Worker w1: draining=true"}},
		{"undrain", []string{"workers", "undrain", "w1"}, 204, nil,
			"POST", "/v1/workers/w1/drain", `{"draining":false}`, []string{"draining=false"}},
	}
	runRequestCases(t, tests)
}

// keys disable reads the controls first and keeps the prohibited holders.
func TestKeysDisableKeepsProhibited(t *testing.T) {
	var put string
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			writeJSON(w, 200, map[string]any{"key": "scene-01", "disabled": false, "prohibited": []string{"t9"}})
			return
		}
		writeJSON(w, 200, map[string]any{"key": "scene-01", "disabled": true, "prohibited": []string{"t9"}})
	})
	got := runCLI(t, "keys", "disable", "scene-01", "-http-addr", srv.URL)
	if got.code != exitOK {
		t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
	}
	srv.mu.Lock()
	for _, r := range srv.reqs {
		if r.Method == http.MethodPut {
			put = r.Body
		}
	}
	srv.mu.Unlock()
	if put != `{"disabled":true,"prohibited":["t9"]}` {
		t.Fatalf("PUT body %q, want the key disabled with t9 still prohibited", put)
	}
}

// keys disable -force asks for the holder's lease to be freed at once, and
// prints the lease the change ended.
func TestKeysDisableForcePrintsEnded(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			writeJSON(w, 200, map[string]any{"key": "scene-01", "disabled": false, "prohibited": []string{}})
			return
		}
		writeJSON(w, 200, map[string]any{"key": "scene-01", "disabled": true, "prohibited": []string{},
			"ended": []map[string]any{{"key": "scene-01", "holder": "t1", "token": 7, "reason": "disabled", "forced": true, "frees_in": "0s"}}})
	})
	got := runCLI(t, "keys", "disable", "scene-01", "-force", "-http-addr", srv.URL)
	if got.code != exitOK {
		t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
	}
	srv.mu.Lock()
	var query string
	for _, r := range srv.reqs {
		if r.Method == http.MethodPut {
			query = r.Query.Encode()
		}
	}
	srv.mu.Unlock()
	if query != "force=true" {
		t.Errorf("PUT query %q, want force=true", query)
	}
	if !strings.Contains(got.stdout, "Ended scene-01 (holder t1, token 7): freed now (forced") {
		t.Errorf("stdout %q, want the forced end of t1's lease", got.stdout)
	}
}
