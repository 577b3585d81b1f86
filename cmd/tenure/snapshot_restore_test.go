package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/fsm"
)

// `tenure snapshot restore` replaces the whole state of a cluster: it says
// what it replaces and restores only when the user types, or gives as
// -confirm, the id of the cluster it reaches; anything else restores
// nothing (no PUT /v1/snapshot).
func TestSnapshotRestoreAsksForTheClusterID(t *testing.T) {
	file := writeFile(t, filepath.Join(t.TempDir(), "backup.snap"), string(fsm.New().Backup()))
	newServer := func(t *testing.T) *fakeServer {
		return newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet {
				writeJSON(w, 200, map[string]any{"node_id": "n1", "cluster_id": "c-123", "role": "leader", "leader_id": "n1", "ready": true})
				return
			}
			writeJSON(w, 200, map[string]any{"snapshot": map[string]any{"index": 1}, "restored": map[string]any{"leases": 0}, "verified": true, "acl_restored": true, "replicated": true})
		})
	}
	restores := func(srv *fakeServer) int {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		n := 0
		for _, r := range srv.reqs {
			if r.Method == http.MethodPut {
				n++
			}
		}
		return n
	}
	for _, tt := range []struct {
		name, typed string
		args        []string
		code        int
		restored    int
		errOut      string
	}{
		{"typed", "c-123\n", nil, exitOK, 1, "Type the id of the cluster to restore into (c-123)"},
		{"given", "", []string{"-confirm", "c-123"}, exitOK, 1, "replaces the whole state of cluster c-123"},
		{"another id", "c-999\n", nil, exitError, 0, `confirmation "c-999" is not the id of the cluster to restore into, "c-123": nothing restored`},
		{"no answer", "", nil, exitError, 0, "no confirmation: nothing restored (give -confirm c-123 in scripts)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(t)
			restoreInput = strings.NewReader(tt.typed)
			t.Cleanup(func() { restoreInput = os.Stdin })
			got := runCLI(t, append(append([]string{"snapshot", "restore", "-http-addr", srv.URL}, tt.args...), file)...)
			if got.code != tt.code || restores(srv) != tt.restored || !strings.Contains(got.stderr, tt.errOut) {
				t.Errorf("exit %d, %d restores, stderr %q; want %d, %d and %q", got.code, restores(srv), got.stderr, tt.code, tt.restored, tt.errOut)
			}
		})
	}
}
