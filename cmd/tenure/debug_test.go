package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/test/harness"
)

// A part a server does not serve (an older server without the debug
// routes) becomes an .error file in the archive, and the command still
// succeeds; a refused token ends it with a message that says what it
// needs; an existing output file is never replaced.
func TestDebugCommand(t *testing.T) {
	older := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/status":
			writeJSON(w, 200, client.NodeStatus{NodeID: "n/1", Role: "follower"})
		case "/v1/members":
			writeJSON(w, 200, wire.MemberList{})
		case "/metrics":
			w.Write([]byte("tenure_is_leader 0\n"))
		default:
			writeJSON(w, 404, wire.ErrorBody{Error: wire.CodeNotFound, Message: "no route GET " + r.URL.Path})
		}
	})
	dir := t.TempDir()
	out := filepath.Join(dir, "a.tar.gz")
	r := runCLI(t, "debug", "-http-addr", older.URL, "-output", out)
	if r.code != exitOK || !strings.Contains(r.stdout, "3 parts missing") {
		t.Fatalf("debug of a server without the debug routes: exit %d, stdout %q, stderr %q; want 0 and 3 parts missing", r.code, r.stdout, r.stderr)
	}
	files := harness.ReadTarGz(t, out)
	for _, name := range []string{"index.json", "status.json", "members.json", "metrics.txt", "goroutine.pprof.error", "heap.pprof.error", "logs.txt.error"} {
		var found bool
		for path, content := range files {
			if strings.HasPrefix(path, "tenure-debug-n_1-") && strings.HasSuffix(path, "/"+name) {
				found = len(content) > 0
			}
		}
		if !found {
			t.Errorf("archive lacks a non-empty %s: %v", name, files)
		}
	}
	for path, content := range files {
		if strings.HasSuffix(path, ".error") && !strings.Contains(string(content), "no route") {
			t.Errorf("%s = %q, want the server's error", path, content)
		}
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("archive mode = %v (%v), want 0600", fi.Mode(), err)
	}

	r = runCLI(t, "debug", "-http-addr", older.URL, "-output", out)
	if r.code != exitError || !strings.Contains(r.stderr, "output") || !strings.Contains(r.stderr, "exists") {
		t.Errorf("debug onto an existing file: exit %d, stderr %q; want an error about the output", r.code, r.stderr)
	}

	denied := answering(t, 403, wire.ErrorBody{Error: wire.CodePermissionDenied, Message: "no token"})
	none := filepath.Join(dir, "none.tar.gz")
	r = runCLI(t, "debug", "-http-addr", denied.URL, "-output", none)
	if r.code != exitError || !strings.Contains(r.stderr, "debug right") || !strings.Contains(r.stderr, "no token") {
		t.Errorf("debug with a refused token: exit %d, stderr %q; want 1 naming the right needed", r.code, r.stderr)
	}
	if _, err := os.Stat(none); !os.IsNotExist(err) {
		t.Errorf("a refused debug left %s", none)
	}
	t.Logf("refused: %s", r.stderr)
}
