//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client"
)

// lockFake is a tenure API for one key: acquire grants token 7 (or
// answers held), renewals succeed until lost is set, release is recorded.
type lockFake struct {
	*fakeServer
	mu   sync.Mutex
	held bool   // acquire answers 409 held
	lost bool   // renewals are refused with lease_lost
	ttl  string // the TTL granted; 1s when empty
	// unavailable: renewals are answered 503 no_leader once okRenewals
	// renewals have succeeded.
	unavailable bool
	okRenewals  int
	renewed     int         // renewals answered with success
	oks         []time.Time // when each acquire or renewal that succeeded arrived
	releasedAt  time.Time   // when the first release arrived
}

func newLockFake(t *testing.T) *lockFake {
	t.Helper()
	f := &lockFake{}
	f.fakeServer = newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		f.fakeServer.mu.Lock()
		body := f.reqs[len(f.reqs)-1].Body // this request's: the lock tests send one at a time
		f.fakeServer.mu.Unlock()
		f.mu.Lock()
		defer f.mu.Unlock()
		ttl := f.ttl
		if ttl == "" {
			ttl = "1s"
		}
		lease := map[string]any{"key": "jobs/nightly", "holder": "h", "token": 7, "ttl": ttl, "state": "held"}
		switch {
		case r.Method == http.MethodPut && f.held:
			writeJSON(w, 409, map[string]any{"error": "held", "message": "held by other", "lease": lease})
		case r.Method == http.MethodPut:
			var req struct{ Holder string }
			_ = json.Unmarshal([]byte(body), &req)
			lease["holder"] = req.Holder
			f.oks = append(f.oks, at)
			writeJSON(w, 201, lease)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/renew" && f.unavailable && f.renewed >= f.okRenewals:
			writeJSON(w, 503, map[string]any{"error": "no_leader", "message": "no leader"})
		case r.Method == http.MethodPost && r.URL.Path == "/v1/renew":
			var req struct {
				Leases []map[string]any `json:"leases"`
			}
			_ = json.Unmarshal([]byte(body), &req)
			res := make([]map[string]any, len(req.Leases))
			for i, l := range req.Leases {
				res[i] = map[string]any{"key": l["key"], "token": l["token"], "ok": !f.lost, "lease": lease}
				if f.lost {
					res[i]["error"], res[i]["reason"] = "lease_lost", "revoked"
				}
			}
			if !f.lost {
				f.renewed++
				f.oks = append(f.oks, at)
			}
			writeJSON(w, 200, map[string]any{"results": res})
		case r.Method == http.MethodDelete:
			if f.releasedAt.IsZero() {
				f.releasedAt = at
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			writeJSON(w, 404, map[string]any{"error": "not_found"})
		}
	})
	return f
}

// released reports whether the fake received a release of token 7.
func (f *lockFake) released() bool {
	f.fakeServer.mu.Lock()
	defer f.fakeServer.mu.Unlock()
	for _, r := range f.reqs {
		if r.Method == http.MethodDelete && strings.Contains(r.Body, `"token":7,`) {
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newLockFake(t)
			command := []string{"sh", "-c", tt.cmd}
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
	f.fakeServer.mu.Lock()
	for _, r := range f.reqs {
		if r.Method == http.MethodPut {
			put = r
		}
	}
	f.fakeServer.mu.Unlock()
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
		{"lock with a grace the TTL leaves no room for", []string{"lock", "-ttl", "2s", "-grace", "1s", "k", "--", "true"}, "-grace must be at most"},
		{"lock with the old default grace", []string{"lock", "-grace", "10s", "k", "--", "true"}, "-grace must be at most"},
		{"lock with a negative grace", []string{"lock", "-grace", "-1s", "k", "--", "true"}, "-grace must not be negative"},
		{"lock with a zero TTL", []string{"lock", "-ttl", "0s", "k", "--", "true"}, "-ttl must be positive"},
		{"elect with a grace the TTL leaves no room for", []string{"elect", "-ttl", "10s", "-grace", "5s", "x", "--", "true"}, "-grace must be at most"},
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

func TestSupervisorTimingLeavesRoomForTheKill(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantGrace  time.Duration
		wantMargin time.Duration
		wantErr    string // in check's message; "" for none
	}{
		{"defaults", nil, time.Second, 2 * time.Second, ""},
		{"short TTL lowers the default grace", []string{"-ttl", "2s"}, 800 * time.Millisecond, time.Second, ""},
		{"grace given", []string{"-ttl", "2s", "-grace", "500ms"}, 500 * time.Millisecond, 700 * time.Millisecond, ""},
		{"no grace", []string{"-ttl", "2s", "-grace", "0s"}, 0, 200 * time.Millisecond, ""},
		{"longest grace", []string{"-ttl", "10s", "-grace", "4s"}, 4 * time.Second, 5 * time.Second, ""},
		{"grace too long", []string{"-ttl", "10s", "-grace", "4001ms"}, 0, 0, "-grace"},
		{"grace too long for the default TTL", []string{"-grace", "10s"}, 0, 0, "-grace"},
		{"negative grace", []string{"-grace", "-1ms"}, 0, 0, "-grace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f supervisorFlags
			fs := flag.NewFlagSet("lock", flag.ContinueOnError)
			f.register(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			msg := f.check(fs)
			if tt.wantErr != "" {
				if !strings.Contains(msg, tt.wantErr) {
					t.Errorf("check = %q, want an error naming %s", msg, tt.wantErr)
				}
				return
			}
			if msg != "" {
				t.Fatalf("check = %q, want none", msg)
			}
			margin := leaseMargin(f.ttl, f.grace)
			if f.grace != tt.wantGrace || margin != tt.wantMargin {
				t.Errorf("grace %v, margin %v; want %v and %v", f.grace, margin, tt.wantGrace, tt.wantMargin)
			}
			// SIGTERM at SentAt + TTL - margin, SIGKILL grace later: before
			// SentAt + TTL, by more than the lease's default margin.
			if kill := f.ttl - margin + f.grace; kill > f.ttl-client.DefaultMargin(f.ttl) {
				t.Errorf("SIGKILL at SentAt + %v, want before SentAt + TTL - %v", kill, client.DefaultMargin(f.ttl))
			}
			if margin > f.ttl/2 {
				t.Errorf("margin %v above TTL/2: the client refuses it", margin)
			}
		})
	}
}

func TestLockKillsTheCommandBeforeTheClusterCanFreeTheKey(t *testing.T) {
	// Renewals fail (no leader) after the first one: the lease ends at its
	// local deadline, and the command, which survives SIGTERM, must be
	// dead before the cluster could free the key: SentAt of the last
	// successful renewal + TTL.
	const ttl = 2 * time.Second
	f := newLockFake(t)
	f.mu.Lock()
	f.ttl, f.unavailable, f.okRenewals = ttl.String(), true, 1
	f.mu.Unlock()
	termed := filepath.Join(t.TempDir(), "termed")
	got := runCLI(t, "lock", "-http-addr", f.URL, "-ttl", ttl.String(), "-grace", "500ms", "jobs/nightly", "--",
		"sh", "-c", `trap 'touch "$0"' TERM; while :; do sleep 0.05; done`, termed)
	if got.code != exitLost {
		t.Errorf("exit code = %d, want %d (stderr %q)", got.code, exitLost, got.stderr)
	}
	if _, err := os.Stat(termed); err != nil {
		t.Errorf("the command did not get SIGTERM before it was killed: %v", err)
	}
	if !strings.Contains(got.stderr, "killing it") {
		t.Errorf("stderr %q does not say the command was killed after the grace period", got.stderr)
	}
	f.mu.Lock()
	oks, released := slices.Clone(f.oks), f.releasedAt
	f.mu.Unlock()
	if len(oks) < 2 || released.IsZero() {
		t.Fatalf("the fake saw %d successful acquires and renewals and release at %v, want the acquire, a renewal and a release", len(oks), released)
	}
	// The release is sent once the command is dead, so it bounds the
	// SIGKILL from above. The request that SentAt was taken for arrived
	// at sent (loopback: well within the slack), so SentAt is after
	// sent - slack.
	const slack = 50 * time.Millisecond
	sent := oks[len(oks)-1]
	t.Logf("the command was dead %v after the last successful renewal arrived (TTL %v)", released.Sub(sent).Round(time.Millisecond), ttl)
	if end := sent.Add(ttl - slack); !released.Before(end) {
		t.Errorf("the command was still alive %v after the last successful renewal arrived, want it dead before TTL %v (less %v)",
			released.Sub(sent).Round(time.Millisecond), ttl, slack)
	}
}

func TestSuperviseDoesNotStartTheCommandUnderALostLease(t *testing.T) {
	f := newLockFake(t)
	f.mu.Lock()
	f.lost = true // the first renewal (after TTL/3) is refused
	f.mu.Unlock()
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{f.URL}
	cfg.Holder = "batch-1"
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	lease, err := c.Acquire(context.Background(), "jobs/nightly", client.WithTTL(time.Second))
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	select {
	case <-lease.Done():
	case <-time.After(3 * time.Second):
		t.Fatalf("the lease was not lost")
	}
	ran := filepath.Join(t.TempDir(), "ran")
	var out bytes.Buffer
	e := (&env{stdout: &out, stderr: &out}).synced()
	o := e.supervise(context.Background(), nil, hclog.NewNullLogger(), lease, []string{"sh", "-c", `touch "$0"; sleep 1`, ran}, 100*time.Millisecond)
	if !o.lost || o.code != exitLost {
		t.Errorf("outcome %+v, want lost with status %d", o, exitLost)
	}
	if _, err := os.Stat(ran); err == nil {
		t.Errorf("the command ran under a lease that was already lost")
	}
}

// processGone reports whether pid no longer runs: it does not exist, or
// it is a zombie waiting to be reaped.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(stat) // the state follows the command name, in parentheses
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

func TestLockKillsWhatTheCommandLeftRunning(t *testing.T) {
	tests := []struct {
		name     string
		lost     bool
		script   string // starts a process in the background, writes its pid to $0
		wantCode int
	}{
		// The background process does not hold the command's output open:
		// the command is over when its shell exits.
		{"the command exits on its own", false, `sleep 300 >/dev/null 2>&1 & echo $! > "$0"`, 0},
		{"the lease is lost: a grandchild that ignores SIGTERM", true,
			`(trap "" TERM; exec sleep 300) >/dev/null 2>&1 & echo $! > "$0"; wait`, exitLost},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newLockFake(t)
			f.mu.Lock()
			f.lost = tt.lost
			f.mu.Unlock()
			pidFile := filepath.Join(t.TempDir(), "pid")
			got := runCLI(t, "lock", "-http-addr", f.URL, "-ttl", "1s", "-grace", "300ms", "jobs/nightly", "--", "sh", "-c", tt.script, pidFile)
			if got.code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", got.code, tt.wantCode, got.stderr)
			}
			b, err := os.ReadFile(pidFile)
			if err != nil {
				t.Fatal(err)
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			// Killed before the lease was released; it may take its
			// reaper a moment to notice.
			deadline := time.Now().Add(2 * time.Second)
			for !processGone(pid) {
				if time.Now().After(deadline) {
					t.Fatalf("the background process %d still runs after tenure released the lease", pid)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}
