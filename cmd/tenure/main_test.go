package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
)

// seenRequest is a request as the fake server received it.
type seenRequest struct {
	Method, Path, Body string
	Query              url.Values
}

// fakeServer records requests and answers them with a handler.
type fakeServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seenRequest
}

func newFakeServer(t *testing.T, handle http.HandlerFunc) *fakeServer {
	t.Helper()
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, seenRequest{Method: r.Method, Path: r.URL.Path, Body: string(body), Query: r.URL.Query()})
		f.mu.Unlock()
		handle(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

// answering returns a fake server that answers every request with status
// and v as JSON.
func answering(t *testing.T, status int, v any) *fakeServer {
	t.Helper()
	return newFakeServer(t, func(w http.ResponseWriter, r *http.Request) { writeJSON(w, status, v) })
}

// writeFile writes data to the file at path, failing t on error, and
// returns path.
func writeFile(t *testing.T, path, data string) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// only returns the one request the server received.
func (f *fakeServer) only(t *testing.T) seenRequest {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.reqs) != 1 {
		t.Fatalf("server received %d requests, want 1: %+v", len(f.reqs), f.reqs)
	}
	return f.reqs[0]
}

// want fails t unless the request is method on path with body.
func (r seenRequest) want(t *testing.T, method, path, body string) {
	t.Helper()
	if r.Method != method || r.Path != path || r.Body != body {
		t.Errorf("request = %s %s %q, want %s %s %q", r.Method, r.Path, r.Body, method, path, body)
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// cliResult is the outcome of one command line.
type cliResult struct {
	code           int
	stdout, stderr string
}

// runCLI runs the command line args in-process.
func runCLI(t *testing.T, args ...string) cliResult {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, &out, &errOut)
	return cliResult{code, out.String(), errOut.String()}
}

// mustRunCLI is runCLI that fails t unless the command line exits 0.
func mustRunCLI(t *testing.T, args ...string) cliResult {
	t.Helper()
	got := runCLI(t, args...)
	if got.code != exitOK {
		t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
	}
	return got
}

func TestUsageAndVersion(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string // in stdout
		wantErr  string // in stderr
	}{
		{"no command", nil, exitUsage, "", "Usage: tenure <command>"},
		{"unknown command", []string{"frobnicate"}, exitUsage, "", `unknown command "frobnicate"`},
		{"help", []string{"-h"}, exitOK, "Commands:", ""},
		{"version", []string{"version"}, exitOK, "tenure dev", ""},
		{"leases without subcommand", []string{"leases"}, exitUsage, "", "Run 'tenure leases -h'"},
		{"unknown leases subcommand", []string{"leases", "steal"}, exitUsage, "", `unknown subcommand "steal"`},
		{"get without key", []string{"leases", "get"}, exitUsage, "", "wrong number of arguments"},
		{"get with two keys", []string{"leases", "get", "a", "b"}, exitUsage, "", "wrong number of arguments"},
		{"unknown flag", []string{"leases", "list", "-colour"}, exitUsage, "", "flag provided but not defined"},
		{"flag help", []string{"leases", "list", "-h"}, exitOK, "", "-prefix"},
		{"bad state", []string{"leases", "list", "-state", "busy"}, exitUsage, "", "-state must be held or free"},
		{"renew without token", []string{"leases", "renew", "k", "-holder", "h"}, exitUsage, "", "-holder and -token are required"},
		{"release without holder", []string{"leases", "release", "k", "-token", "3"}, exitUsage, "", "-holder and -token are required"},
		{"operator without subcommand", []string{"operator"}, exitUsage, "", "operator needs a subcommand"},
		{"remove-server without id", []string{"operator", "remove-server"}, exitUsage, "", "wrong number of arguments"},
		{"bench bad op", []string{"bench", "-op", "steal"}, exitUsage, "", "-op must be"},
		{"bench bad mix", []string{"bench", "-mix", "read=x"}, exitUsage, "", "-mix"},
		{"bench no clients", []string{"bench", "-clients", "0"}, exitUsage, "", "-clients"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCLI(t, tt.args...)
			if got.code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", got.code, tt.wantCode, got.stderr)
			}
			if !strings.Contains(got.stdout, tt.wantOut) {
				t.Errorf("stdout = %q, want it to contain %q", got.stdout, tt.wantOut)
			}
			if !strings.Contains(got.stderr, tt.wantErr) {
				t.Errorf("stderr = %q, want it to contain %q", got.stderr, tt.wantErr)
			}
			// A usage error is one line and a pointer to -h, not the
			// whole help (a command line with no command at all gets the
			// list of commands).
			if tt.wantCode == exitUsage && len(tt.args) > 0 {
				if lines := strings.Count(got.stderr, "\n"); lines > 2 || !strings.Contains(got.stderr, " -h'") {
					t.Errorf("usage error of %d lines, want the error and a pointer to -h:\n%s", lines, got.stderr)
				}
			}
		})
	}
}

func TestCommandFailsWhenClusterIsDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	addr := srv.URL
	srv.Close()
	got := runCLI(t, "status", "-http-addr", addr)
	if got.code != exitError || got.stdout != "" {
		t.Errorf("status against a down server = %d, stdout %q, stderr %q; want 1 and nothing", got.code, got.stdout, got.stderr)
	}
	// While it keeps trying it says so once, naming the flag and the
	// variable of the addresses; then it gives up saying it again.
	warning, errLine, ok := strings.Cut(got.stderr, "\nerror: ")
	if !ok || strings.Count(warning, "warning: no server reachable yet") != 1 || !strings.Contains(warning, "connection refused") ||
		!strings.Contains(warning, "-http-addr or TENURE_HTTP_ADDR") {
		t.Errorf("stderr %q: want one warning that no server is reachable, naming -http-addr and TENURE_HTTP_ADDR, before the error", got.stderr)
	}
	if !strings.Contains(errLine, "No server could be reached") || !strings.Contains(errLine, "-http-addr or TENURE_HTTP_ADDR") {
		t.Errorf("error %q does not say that no server could be reached and which flag sets the addresses", errLine)
	}
}

// requestCase is one command line run against a fake server: the one
// request it must send, and what its output must contain.
type requestCase struct {
	name       string
	args       []string
	status     int
	answer     any
	wantMethod string
	wantPath   string
	wantBody   string
	wantOut    []string
}

// runRequestCases runs each case against a fake server that answers with
// the case's status and JSON answer (none when answer is nil).
func runRequestCases(t *testing.T, tests []requestCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
				if tt.answer == nil {
					w.WriteHeader(tt.status)
					return
				}
				writeJSON(w, tt.status, tt.answer)
			})
			got := mustRunCLI(t, append(tt.args, "-http-addr", srv.URL)...)
			req := srv.only(t)
			req.want(t, tt.wantMethod, tt.wantPath, tt.wantBody)
			for _, want := range tt.wantOut {
				if !strings.Contains(got.stdout, want) {
					t.Errorf("output lacks %q:\n%s", want, got.stdout)
				}
			}
			if strings.HasSuffix(tt.name, "json") && !json.Valid([]byte(got.stdout)) {
				t.Errorf("-json output is not JSON:\n%s", got.stdout)
			}
		})
	}
}
