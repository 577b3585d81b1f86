//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockFake is a tenure API for one key: acquire grants token 7 (or
// answers held), renewals succeed until lost is set, release is recorded.
type lockFake struct {
	*fakeServer
	mu   sync.Mutex
	held bool // acquire answers 409 held
	lost bool // renewals are refused with lease_lost
}

func newLockFake(t *testing.T) *lockFake {
	t.Helper()
	f := &lockFake{}
	f.fakeServer = newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		held, lost := f.held, f.lost
		f.mu.Unlock()
		lease := map[string]any{"key": "jobs/nightly", "holder": "h", "token": 7, "ttl": "1s", "state": "held"}
		switch {
		case r.Method == http.MethodPut && held:
			writeJSON(w, 409, map[string]any{"error": "held", "message": "held by other", "lease": lease})
		case r.Method == http.MethodPut:
			var body struct{ Holder string }
			f.mu.Lock()
			body.Holder = f.reqs[len(f.reqs)-1].Body
			f.mu.Unlock()
			_ = json.Unmarshal([]byte(body.Holder), &body)
			lease["holder"] = body.Holder
			writeJSON(w, 201, lease)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/renew":
			var body struct {
				Leases []map[string]any `json:"leases"`
			}
			f.mu.Lock()
			_ = json.Unmarshal([]byte(f.reqs[len(f.reqs)-1].Body), &body)
			f.mu.Unlock()
			res := make([]map[string]any, len(body.Leases))
			for i, l := range body.Leases {
				res[i] = map[string]any{"key": l["key"], "token": l["token"], "ok": !lost, "lease": lease}
				if lost {
					res[i]["error"], res[i]["reason"] = "lease_lost", "revoked"
				}
			}
			writeJSON(w, 200, map[string]any{"results": res})
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		default:
			writeJSON(w, 404, map[string]any{"error": "not_found"})
		}
	})
	return f
}

// released reports whether the fake received a release of token 7.
func (f *lockFake) released() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.reqs {
		if r.Method == http.MethodDelete && r.Query.Get("token") == "7" {
			return true
		}
	}
	return false
}

// runCLICtx runs the command line in-process with ctx.
func runCLICtx(ctx context.Context, args ...string) cliResult {
	var out, errOut bytes.Buffer
	code := run(ctx, args, &out, &errOut)
	return cliResult{code, out.String(), errOut.String()}
}

func TestLockRunsTheCommandUnderTheLease(t *testing.T) {
	tests := []struct {
		name     string
		cmd      string
		wantCode int
		wantOut  string
	}{
		{"sees the lease and exits 0", `echo "$TENURE_KEY $TENURE_TOKEN $TENURE_HOLDER"`, 0, "jobs/nightly 7 batch-1\n"},
		{"its exit status is tenure's", `exit 3`, 3, ""},
		{"killed by a signal", `kill -USR1 $$`, 128 + 10, ""},
		{"cannot be started", ``, exitCannotRun, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newLockFake(t)
			command := []string{"sh", "-c", tt.cmd}
			if tt.cmd == "" {
				command = []string{"/nonexistent/command"}
			}
			args := append([]string{"lock", "-http-addr", f.URL, "-ttl", "2s", "-holder", "batch-1", "jobs/nightly", "--"}, command...)
			got := runCLI(t, args...)
			if got.code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", got.code, tt.wantCode, got.stderr)
			}
			if got.stdout != tt.wantOut {
				t.Errorf("stdout = %q, want %q", got.stdout, tt.wantOut)
			}
			if !f.released() {
				t.Errorf("the lease was not released after the command exited")
			}
		})
	}
}

func TestLockStopsTheCommandWhenTheLeaseIsLost(t *testing.T) {
	tests := []struct {
		name string
		cmd  string // runs until stopped
	}{
		{"stops on SIGTERM", `sleep 30`},
		{"ignores SIGTERM: killed after -grace", `trap "" TERM; sleep 30`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newLockFake(t)
			f.mu.Lock()
			f.lost = true // the first renewal (after TTL/3) is refused
			f.mu.Unlock()
			start := time.Now()
			got := runCLI(t, "lock", "-http-addr", f.URL, "-ttl", "1s", "-grace", "300ms", "jobs/nightly", "--", "sh", "-c", tt.cmd)
			if got.code != exitLost {
				t.Errorf("exit code = %d, want %d (stderr %q)", got.code, exitLost, got.stderr)
			}
			if took := time.Since(start); took > 3*time.Second {
				t.Errorf("tenure exited %v after start, want the command stopped within the renewal interval + grace", took)
			}
			if !strings.Contains(got.stderr, "lease lost") {
				t.Errorf("stderr %q does not say the lease was lost", got.stderr)
			}
		})
	}
}

func TestLockPassesTheStopOnToTheCommand(t *testing.T) {
	f := newLockFake(t)
	ready := filepath.Join(t.TempDir(), "ready")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan cliResult, 1)
	go func() {
		done <- runCLICtx(ctx, "lock", "-http-addr", f.URL, "-ttl", "2s", "jobs/nightly", "--",
			"sh", "-c", `trap "echo stopping; exit 4" TERM; touch "$0"; while :; do sleep 0.05; done`, ready)
	}()
	deadline := time.Now().Add(5 * time.Second)
	for { // the shell has set its trap
		if _, err := os.Stat(ready); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the command did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	var got cliResult
	select {
	case got = <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("tenure did not exit after its context ended")
	}
	if got.code != 4 || !strings.Contains(got.stdout, "stopping") {
		t.Errorf("exit code %d, stdout %q; want the command's trap to run and its status 4", got.code, got.stdout)
	}
	if !f.released() {
		t.Errorf("the lease was not released after the command exited")
	}
}

func TestLockNotAcquiredWithinWait(t *testing.T) {
	f := newLockFake(t)
	f.mu.Lock()
	f.held = true
	f.mu.Unlock()
	got := runCLI(t, "lock", "-http-addr", f.URL, "-wait", "0s", "jobs/nightly", "--", "true")
	if got.code != exitNotAcquired || !strings.Contains(got.stderr, "not acquired") {
		t.Errorf("exit code %d, stderr %q; want %d and why", got.code, got.stderr, exitNotAcquired)
	}
}

func TestElectExitsWithTheCommandsStatus(t *testing.T) {
	f := newLockFake(t)
	got := runCLI(t, "elect", "-http-addr", f.URL, "-ttl", "2s", "scheduler", "--", "sh", "-c", `echo "$TENURE_KEY $TENURE_TOKEN"; exit 5`)
	if got.code != 5 || got.stdout != "elections/scheduler 7\n" {
		t.Errorf("exit code %d, stdout %q; want 5 and the lease", got.code, got.stdout)
	}
	var put seenRequest
	f.mu.Lock()
	for _, r := range f.reqs {
		if r.Method == http.MethodPut {
			put = r
		}
	}
	f.mu.Unlock()
	if put.Path != "/v1/leases/elections/scheduler" {
		t.Errorf("campaigned on %s, want /v1/leases/elections/scheduler", put.Path)
	}
	if !f.released() {
		t.Errorf("tenure did not resign after the command exited")
	}
}

func TestLockAndElectUsage(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"lock without --", []string{"lock", "k", "true"}, "must follow --"},
		{"lock without command", []string{"lock", "k", "--"}, "must follow --"},
		{"lock without key", []string{"lock", "--", "true"}, "wrong number of arguments"},
		{"lock with zero slots", []string{"lock", "-n", "0", "k", "--", "true"}, "-n must be"},
		{"lock with a negative wait", []string{"lock", "-wait", "-1s", "k", "--", "true"}, "-wait must not be negative"},
		{"elect without name", []string{"elect", "--", "true"}, "wrong number of arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCLI(t, tt.args...)
			if got.code != exitUsage || !strings.Contains(got.stderr, tt.wantErr) {
				t.Errorf("exit code %d, stderr %q; want %d and %q", got.code, got.stderr, exitUsage, tt.wantErr)
			}
		})
	}
	if got := runCLI(t, "lock", "-h"); got.code != exitOK || !strings.Contains(got.stderr, "TENURE_TOKEN") {
		t.Errorf("lock -h: exit code %d, stderr %q; want the usage", got.code, got.stderr)
	}
}
