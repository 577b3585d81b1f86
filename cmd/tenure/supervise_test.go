package main

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// A command in the log reads as a shell would take it back, with no
// escapes added on top of the log's own quoting (it was %q-quoted once
// more: command="\"sh -c 'echo hi'\"").
func TestCommandInTheLogIsQuotedOnce(t *testing.T) {
	var buf bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &buf})
	cmd := []string{"sh", "-c", "echo 'hi there' > /tmp/out", "", "plain-arg_1.txt"}
	log.Info("lease acquired; running the command", "command", fmtCommand(cmd))
	want := `command="sh -c 'echo '\''hi there'\'' > /tmp/out' '' plain-arg_1.txt"`
	if !strings.Contains(buf.String(), want) {
		t.Errorf("log line %q, want %s in it", buf.String(), want)
	}
}

// A command that cannot start fails with 127 before anything is acquired:
// no request reaches the cluster, so no token is burnt for it.
func TestCommandThatCannotStartAcquiresNothing(t *testing.T) {
	for _, cmd := range []string{"lock", "elect"} {
		srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) })
		got := runCLI(t, cmd, "-http-addr", srv.URL, "jobs/nightly", "--", "/nonexistent/report", "-x")
		srv.mu.Lock()
		sent := len(srv.reqs)
		srv.mu.Unlock()
		if got.code != exitCannotRun || sent != 0 || !strings.Contains(got.stderr, "cannot run /nonexistent/report") || !strings.Contains(got.stderr, "nothing acquired") {
			t.Errorf("%s -- /nonexistent/report: exit %d, %d requests, stderr %q; want 127, none, and the reason", cmd, got.code, sent, got.stderr)
		}
	}
}
