package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/client/wire"
)

// tenure leases list lists every lease when the server answers in pages:
// it follows next to the last page, in the table and in -json.
func TestLeasesListFollowsPages(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("cursor") {
		case "":
			writeJSON(w, 200, map[string]any{"leases": []any{lease("a"), lease("b")}, "index": 42, "next": "p2"})
		case "p2":
			writeJSON(w, 200, map[string]any{"leases": []any{lease("c")}, "index": 43, "next": ""})
		default:
			writeJSON(w, 400, map[string]any{"error": "invalid_query", "message": "cursor"})
		}
	})
	got := mustRunCLI(t, "leases", "list", "-http-addr", srv.URL)
	var keys []string
	for _, line := range strings.Split(strings.TrimSpace(got.stdout), "\n")[1:] {
		keys = append(keys, strings.Fields(line)[0])
	}
	if fmt.Sprint(keys) != "[a b c]" {
		t.Errorf("listed %q, want a, b and c:\n%s", keys, got.stdout)
	}
	got = runCLI(t, "leases", "list", "-json", "-http-addr", srv.URL)
	var out wire.LeaseList
	if err := json.Unmarshal([]byte(got.stdout), &out); err != nil || len(out.Leases) != 3 || out.Next != "" || out.Index != 42 {
		t.Errorf("-json: %v, %d leases, next %q, index %d; want 3, no next, index 42 (the first page's)", err, len(out.Leases), out.Next, out.Index)
	}
}
