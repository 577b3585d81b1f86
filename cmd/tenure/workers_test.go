package main

import (
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
)

func TestWorkersCommands(t *testing.T) {
	list := map[string]any{"workers": []any{
		map[string]any{"id": "w1", "status": "alive", "groups": []string{"g"}, "capacity": 4, "draining": false, "drained": true,
			"keys": []any{map[string]any{"group": "g", "targets": []string{}, "holds": []string{"g-1", "g-2"}}}},
		map[string]any{"id": "w2", "status": "dead", "groups": []string{"g"}, "capacity": 0, "draining": true, "drained": false, "keys": []any{}},
	}, "index": 5}
	drained := map[string]any{"worker": "w1", "draining": true, "warnings": []string{}}
	tests := []requestCase{
		{"list", []string{"workers", "list"}, 200, list, "GET", "/v1/workers", "",
			[]string{"WORKER", "w1", "alive", "drained", "g: g-1, g-2", "w2", "dead", "draining"}},
		{"list json", []string{"workers", "list", "-json"}, 200, list, "GET", "/v1/workers", "", []string{`"holds"`}},
		{"drain json", []string{"workers", "drain", "w1", "-json"}, 200, drained, "POST", "/v1/workers/w1/drain", `{"draining":true}`, []string{`"warnings"`}},
	}
	runRequestCases(t, tests)
}

// -force asks the cluster to accept an unknown worker or key; without it,
// the cluster's 404 is the command's error.
func TestForceFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"drain", []string{"workers", "drain", "ghost"}},
		{"disable", []string{"keys", "disable", "typo"}},
		{"prohibit", []string{"keys", "prohibit", "typo", "h1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
				switch {
				case r.Method == http.MethodGet:
					writeJSON(w, 200, map[string]any{"key": "typo", "disabled": false, "prohibited": []string{}})
				case r.URL.Query().Get("force") != "true":
					writeJSON(w, 404, map[string]any{"error": "not_found", "message": `"ghost" is unknown; force=true accepts it`})
				case strings.HasPrefix(r.URL.Path, "/v1/workers/"):
					writeJSON(w, 200, map[string]any{"worker": "ghost", "draining": true, "warnings": []string{}})
				default:
					writeJSON(w, 200, map[string]any{"key": "typo", "disabled": true, "prohibited": []string{}})
				}
			})
			got := runCLI(t, append(tt.args, "-http-addr", srv.URL)...)
			if got.code != exitError || !strings.Contains(got.stderr, "force=true") {
				t.Errorf("without -force: exit %d, stderr %q; want 1 and the cluster's message", got.code, got.stderr)
			}
			got = runCLI(t, append(tt.args, "-force", "-http-addr", srv.URL)...)
			if got.code != exitOK {
				t.Errorf("with -force: exit %d, stderr %q", got.code, got.stderr)
			}
		})
	}
}

// A drain that leaves a group without a worker prints the cluster's
// warning on stderr, and still succeeds.
func TestDrainPrintsWarnings(t *testing.T) {
	srv := answering(t, 200, map[string]any{"worker": "w1", "draining": true, "warnings": []string{`worker "w1" is the last live worker of group "g"`}})
	got := runCLI(t, "workers", "drain", "w1", "-http-addr", srv.URL)
	if got.code != exitOK || !strings.Contains(got.stderr, `warning: worker "w1" is the last live worker of group "g"`) {
		t.Errorf("exit %d, stderr %q; want 0 and the warning", got.code, got.stderr)
	}
}

// workerHolds answers GET /v1/workers?id=w1 with the next of a series of
// held key sets (the last one repeats), each at a higher index.
func workerHolds(t *testing.T, series ...[]string) *fakeServer {
	var mu sync.Mutex
	n := 0
	return newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			writeJSON(w, 200, map[string]any{"worker": "w1", "draining": true, "warnings": []string{}})
			return
		}
		mu.Lock()
		holds := series[min(n, len(series)-1)]
		n++
		index := n
		mu.Unlock()
		time.Sleep(10 * time.Millisecond) // a blocking query's wait, shortened
		workers := []any{}
		if holds != nil {
			workers = append(workers, map[string]any{"id": "w1", "status": "alive", "groups": []string{"g"},
				"keys": []any{map[string]any{"group": "g", "targets": []string{}, "holds": holds}}})
		}
		writeJSON(w, 200, map[string]any{"workers": workers, "index": index})
	})
}

// drain -wait prints the keys left whenever they change and returns once
// the worker holds none.
func TestDrainWait(t *testing.T) {
	srv := workerHolds(t, []string{"a", "b", "c"}, []string{"a", "b", "c"}, []string{"a"}, []string{})
	got := runCLI(t, "workers", "drain", "w1", "-wait", "-http-addr", srv.URL)
	if got.code != exitOK {
		t.Fatalf("exit %d, stderr %q", got.code, got.stderr)
	}
	want := "Worker w1: draining=true\n" +
		"worker w1: 3 keys left (group g: a, b, c)\n" +
		"worker w1: 1 key left (group g: a)\n" +
		"worker w1: no keys left\n"
	if got.stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", got.stdout, want)
	}
	// A worker that nothing lists any more holds nothing.
	srv = workerHolds(t, []string{"a"}, nil)
	if got := runCLI(t, "workers", "drain", "w1", "-wait", "-http-addr", srv.URL); got.code != exitOK || !strings.Contains(got.stdout, "no keys left") {
		t.Errorf("worker gone: exit %d, stdout %q, stderr %q", got.code, got.stdout, got.stderr)
	}
}

// drain -wait fails (exit 1) when the worker still holds keys at -timeout.
func TestDrainWaitTimeout(t *testing.T) {
	srv := workerHolds(t, []string{"a", "b"})
	got := runCLI(t, "workers", "drain", "w1", "-wait", "-timeout", "200ms", "-http-addr", srv.URL)
	if got.code != exitError || !strings.Contains(got.stderr, "worker w1 still holds keys after 200ms") {
		t.Errorf("exit %d, stderr %q; want 1 and the timeout named", got.code, got.stderr)
	}
	if !strings.Contains(got.stdout, "worker w1: 2 keys left (group g: a, b)") {
		t.Errorf("stdout %q lacks the progress line", got.stdout)
	}
}

// drain of several workers drains each, in order, in a request of its own.
func TestDrainSeveralWorkers(t *testing.T) {
	srv := answering(t, 200, map[string]any{"worker": "w", "draining": true, "warnings": []string{}})
	got := runCLI(t, "workers", "drain", "w1", "w2", "-http-addr", srv.URL)
	if got.code != exitOK || got.stdout != "Worker w1: draining=true\nWorker w2: draining=true\n" {
		t.Fatalf("exit %d, stdout %q, stderr %q", got.code, got.stdout, got.stderr)
	}
	var paths []string
	srv.mu.Lock()
	for _, r := range srv.reqs {
		paths = append(paths, r.Method+" "+r.Path)
	}
	srv.mu.Unlock()
	if want := []string{"POST /v1/workers/w1/drain", "POST /v1/workers/w2/drain"}; !slices.Equal(paths, want) {
		t.Errorf("requests %q, want %q", paths, want)
	}
}

// workers roll needs the restart command after -- and sane flags, and
// refuses them before it asks the cluster anything.
func TestRollUsage(t *testing.T) {
	srv := answering(t, 500, map[string]any{})
	for _, args := range [][]string{
		{"workers", "roll", "g"},
		{"workers", "roll", "g", "-batch", "0", "--", "true"},
		{"workers", "roll", "-batch", "1", "--", "true"},
	} {
		got := runCLI(t, append(args, "-http-addr", srv.URL)...)
		if got.code != exitUsage {
			t.Errorf("%q: exit %d, stderr %q; want %d", args, got.code, got.stderr, exitUsage)
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if len(srv.reqs) != 0 {
		t.Errorf("a roll refused for its usage sent %d requests", len(srv.reqs))
	}
}

// A group has settled for a roll when the batch's workers are alive and
// every key with a target is held by it.
func TestRollWaitsForASettledGroup(t *testing.T) {
	alive := []client.GroupWorker{{ID: "w1", Status: "alive"}, {ID: "w2", Status: "alive"}}
	for _, tc := range []struct {
		name string
		g    client.Group
		want string
	}{
		{"settled", client.Group{Workers: alive, Keys: []client.GroupKey{{Key: "a", Target: "w1", State: "held", Worker: "w1"}, {Key: "b", State: "free"}}}, ""},
		{"a worker not back", client.Group{Workers: alive[:1]}, "worker w2 is not alive"},
		{"a key moving", client.Group{Workers: alive, Keys: []client.GroupKey{{Key: "a", Target: "w2", State: "held", Worker: "w1"}}}, "keys not held by their target: 1"},
		{"a key unowned", client.Group{Workers: alive, Keys: []client.GroupKey{{Key: "a", Target: "w2", State: "free"}}}, "keys not held by their target: 1"},
	} {
		if got := unsettled(&tc.g, []string{"w1", "w2"}); got != tc.want {
			t.Errorf("%s: unsettled = %q, want %q", tc.name, got, tc.want)
		}
	}
}
