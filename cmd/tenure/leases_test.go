package main

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
)

func lease(key string) map[string]any {
	return map[string]any{
		"key": key, "holder": "tracker-0", "token": 17, "ttl": "10s", "state": "held",
		"expires_in": "9.2s", "acquired_at": "2026-11-21T10:00:00.123Z",
		"metadata": map[string]string{"zone": "a"}, "modify_index": 42,
	}
}

func TestLeasesList(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		free := map[string]any{"key": "scene-02", "holder": "old", "token": 9, "ttl": "5s", "state": "free", "reason": "expired", "modify_index": 40}
		writeJSON(w, 200, map[string]any{"leases": []any{lease("scene-01"), free}, "index": 42})
	})

	got := mustRunCLI(t, "leases", "list", "-http-addr", srv.URL, "-prefix", "scene-", "-state", "held", "-holder", "tracker-0", "-stale")
	req := srv.only(t)
	wantQuery := map[string]string{"prefix": "scene-", "state": "held", "holder": "tracker-0", "stale": "true"}
	if req.Method != "GET" || req.Path != "/v1/leases" {
		t.Errorf("request = %s %s, want GET /v1/leases", req.Method, req.Path)
	}
	for k, v := range wantQuery {
		if req.Query.Get(k) != v {
			t.Errorf("query %s = %q, want %q", k, req.Query.Get(k), v)
		}
	}
	lines := strings.Split(strings.TrimRight(got.stdout, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("output has %d lines, want a header and 2 rows:\n%s", len(lines), got.stdout)
	}
	if f := strings.Fields(lines[0]); f[0] != "KEY" || f[1] != "STATE" {
		t.Errorf("header = %q", lines[0])
	}
	if f := strings.Fields(lines[1]); !reflect.DeepEqual(f, []string{"scene-01", "held", "tracker-0", "17", "10s", "9.2s", "-", "42"}) {
		t.Errorf("row 1 = %q", f)
	}
	if f := strings.Fields(lines[2]); !reflect.DeepEqual(f, []string{"scene-02", "free", "old", "9", "5s", "-", "expired", "40"}) {
		t.Errorf("row 2 = %q", f)
	}
	// Columns are aligned: STATE starts at the same offset on every line.
	if i := strings.Index(lines[0], "STATE"); strings.Index(lines[1], "held") != i || strings.Index(lines[2], "free") != i {
		t.Errorf("columns are not aligned:\n%s", got.stdout)
	}
}

func TestLeasesListJSON(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Tenure-Index", "42")
		writeJSON(w, 200, map[string]any{"leases": []any{lease("scene-01")}, "index": 42})
	})
	got := mustRunCLI(t, "leases", "list", "-json", "-http-addr", srv.URL)
	var out struct {
		Leases []map[string]any `json:"leases"`
		Index  uint64           `json:"index"`
	}
	if err := json.Unmarshal([]byte(got.stdout), &out); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, got.stdout)
	}
	if out.Index != 42 || len(out.Leases) != 1 {
		t.Fatalf("output = %+v, want index 42 and one lease", out)
	}
	// The lease is printed in the wire form of the API.
	want := lease("scene-01")
	for k, v := range want {
		gotJSON, _ := json.Marshal(out.Leases[0][k])
		wantJSON, _ := json.Marshal(v)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("lease field %s = %s, want %s", k, gotJSON, wantJSON)
		}
	}
}

func TestLeasesGet(t *testing.T) {
	srv := answering(t, 200, lease("partitions/17"))
	// Flags may follow the key.
	got := mustRunCLI(t, "leases", "get", "partitions/17", "-stale", "-http-addr", srv.URL)
	req := srv.only(t)
	if req.Path != "/v1/leases/partitions/17" || req.Query.Get("stale") != "true" {
		t.Errorf("request = %s ?%v, want /v1/leases/partitions/17 ?stale=true", req.Path, req.Query)
	}
	for _, want := range []string{"Key:", "partitions/17", "Token:", "17", "Metadata:", "zone=a", "Renewed at:"} {
		if !strings.Contains(got.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, got.stdout)
		}
	}
}

func TestLeasesGetDefaultAddressFromEnvironment(t *testing.T) {
	srv := answering(t, 200, lease("k"))
	t.Setenv("TENURE_HTTP_ADDR", srv.URL)
	if got := runCLI(t, "leases", "get", "k"); got.code != exitOK {
		t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
	}
	srv.only(t)
}

func TestLeasesAcquire(t *testing.T) {
	tests := []struct {
		name      string
		status    int
		args      []string
		wantBody  map[string]any
		wantTitle string
	}{
		{
			name:      "new grant",
			status:    201,
			args:      []string{"scene-01", "-holder", "tracker-0", "-ttl", "15s"},
			wantBody:  map[string]any{"holder": "tracker-0", "ttl": "15s"},
			wantTitle: "Acquired scene-01",
		},
		{
			name:      "already held, wait and metadata",
			status:    200,
			args:      []string{"-holder", "tracker-0", "-wait", "30s", "-meta", "zone=a", "-meta", "rack=7", "-secret", cliSecret, "scene-01"},
			wantBody:  map[string]any{"holder": "tracker-0", "ttl": "10s", "wait": "30s", "metadata": map[string]any{"zone": "a", "rack": "7"}, "secret": cliSecret},
			wantTitle: "Already held by this holder: scene-01 (deadline restarted, metadata replaced)",
		},
		{
			name:      "already held, no metadata",
			status:    200,
			args:      []string{"-holder", "tracker-0", "-secret", cliSecret, "scene-01"},
			wantBody:  map[string]any{"holder": "tracker-0", "ttl": "10s", "secret": cliSecret},
			wantTitle: "Already held by this holder: scene-01 (deadline restarted)\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := answering(t, tt.status, lease("scene-01"))
			args := append([]string{"leases", "acquire", "-http-addr", srv.URL}, tt.args...)
			got := mustRunCLI(t, args...)
			req := srv.only(t)
			if req.Method != "PUT" || req.Path != "/v1/leases/scene-01" {
				t.Errorf("request = %s %s, want PUT /v1/leases/scene-01", req.Method, req.Path)
			}
			var body map[string]any
			err := json.Unmarshal([]byte(req.Body), &body)
			if s, _ := body["secret"].(string); tt.wantBody["secret"] == nil && len(s) == 32 {
				delete(body, "secret") // a new secret, made by the command
			}
			if err != nil || !reflect.DeepEqual(body, tt.wantBody) {
				t.Errorf("body = %s, want %v", req.Body, tt.wantBody)
			}
			if !strings.HasPrefix(got.stdout, tt.wantTitle) {
				t.Errorf("output starts %q, want %q", firstLine(got.stdout), tt.wantTitle)
			}
		})
	}
}

func TestLeasesAcquireGeneratesHolder(t *testing.T) {
	srv := answering(t, 201, lease("k"))
	if got := runCLI(t, "leases", "acquire", "k", "-json", "-http-addr", srv.URL); got.code != exitOK {
		t.Fatalf("exit code %d, stderr %q", got.code, got.stderr)
	}
	var body map[string]any
	_ = json.Unmarshal([]byte(srv.only(t).Body), &body)
	if h, _ := body["holder"].(string); strings.Count(h, "-") < 2 {
		t.Errorf("holder = %q, want a generated hostname-pid-random id", h)
	}
}

func TestLeasesAcquireHeldFails(t *testing.T) {
	srv := answering(t, 409, map[string]any{"error": "held", "message": "scene-01 is held by tracker-0", "lease": lease("scene-01")})
	got := runCLI(t, "leases", "acquire", "scene-01", "-holder", "tracker-1", "-json", "-http-addr", srv.URL)
	if got.code != exitError {
		t.Errorf("exit code = %d, want %d", got.code, exitError)
	}
	if want := "error: held: scene-01 is held by tracker-0\n"; got.stderr != want {
		t.Errorf("stderr = %q, want %q", got.stderr, want)
	}
	if got.stdout != "" {
		t.Errorf("stdout = %q, want nothing", got.stdout)
	}
	srv.only(t) // a conflict is not retried
}

func TestLeasesRenewReleaseRevoke(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		status     int
		wantMethod string
		wantPath   string
		wantBody   string
		wantQuery  map[string]string
		wantOut    string
	}{
		{"renew", []string{"renew", "scene-01", "-holder", "tracker-0", "-token", "17", "-secret", cliSecret}, 200,
			"POST", "/v1/renew/scene-01", `{"holder":"tracker-0","token":17,"secret":"` + cliSecret + `"}`, nil, "Renewed scene-01"},
		{"release", []string{"release", "scene-01", "-holder", "tracker-0", "-token", "17", "-secret", cliSecret}, 204,
			"DELETE", "/v1/leases/scene-01", `{"holder":"tracker-0","token":17,"secret":"` + cliSecret + `"}`, nil, "Released scene-01 (token 17)"},
		{"release json", []string{"release", "scene-01", "-holder", "tracker-0", "-token", "17", "-json", "-secret", cliSecret}, 204,
			"DELETE", "/v1/leases/scene-01", `{"holder":"tracker-0","token":17,"secret":"` + cliSecret + `"}`, nil, `"released": true`},
		{"revoke", []string{"revoke", "scene-01"}, 200, "POST", "/v1/revoke/scene-01", "", nil,
			"Revoked scene-01 (holder tracker-0, token 17): renewals refused (revoked), frees in 4.2s"},
		{"revoke forced", []string{"revoke", "scene-01", "-force"}, 200, "POST", "/v1/revoke/scene-01", "", map[string]string{"force": "true"},
			"Revoked scene-01 (holder tracker-0, token 17): renewals refused (revoked), frees in 4.2s"},
		{"revoke by holder", []string{"revoke", "-holder", "tracker-0"}, 200, "POST", "/v1/revoke", "", map[string]string{"holder": "tracker-0"},
			"frees in 4.2s"},
		{"revoke against an older server", []string{"revoke", "scene-01"}, 204, "POST", "/v1/revoke/scene-01", "", nil, "Nothing to revoke"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
				if tt.status == 204 {
					w.WriteHeader(204)
					return
				}
				if strings.HasPrefix(r.URL.Path, "/v1/revoke") {
					writeJSON(w, tt.status, client.RevokeResult{Revoked: []client.RevokedLease{
						{Key: "scene-01", Holder: "tracker-0", Token: 17, Reason: client.ReasonRevoked, FreesIn: 4200 * time.Millisecond}}})
					return
				}
				writeJSON(w, tt.status, lease("scene-01"))
			})
			args := append([]string{"leases"}, tt.args...)
			got := mustRunCLI(t, append(args, "-http-addr", srv.URL)...)
			req := srv.only(t)
			req.want(t, tt.wantMethod, tt.wantPath, tt.wantBody)
			for k, v := range tt.wantQuery {
				if req.Query.Get(k) != v {
					t.Errorf("query %s = %q, want %q", k, req.Query.Get(k), v)
				}
			}
			if !strings.Contains(got.stdout, tt.wantOut) {
				t.Errorf("stdout = %q, want it to contain %q", got.stdout, tt.wantOut)
			}
		})
	}
}

// A release that releases nothing says so: "nothing to release" when the
// lease had ended, an error (and exit 1) when it was never the caller's.
func TestLeasesReleaseSaysWhatHappened(t *testing.T) {
	t.Run("already gone", func(t *testing.T) {
		srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set(client.HeaderRelease, "gone")
			w.WriteHeader(204)
		})
		got := runCLI(t, "leases", "release", "scene-01", "-holder", "h", "-token", "17", "-secret", cliSecret, "-http-addr", srv.URL)
		if got.code != exitOK || strings.Contains(got.stdout, "Released") || !strings.Contains(got.stdout, "Nothing to release") ||
			strings.Contains(got.stdout, "had ended") || !strings.Contains(got.stdout, "or the token was never this key's") {
			t.Errorf("exit %d, stdout %q; want 0 and nothing released", got.code, got.stdout)
		}
		got = runCLI(t, "leases", "release", "scene-01", "-holder", "h", "-token", "17", "-json", "-secret", cliSecret, "-http-addr", srv.URL)
		if !strings.Contains(got.stdout, `"released": false`) || !strings.Contains(got.stdout, `"already_gone": true`) {
			t.Errorf("json = %q, want released false, already_gone true", got.stdout)
		}
	})
	t.Run("not the holder", func(t *testing.T) {
		srv := answering(t, 409, map[string]any{"error": "not_holder", "message": "key \"scene-01\" is held by \"t0\" under token 17", "lease": lease("scene-01")})
		got := runCLI(t, "leases", "release", "scene-01", "-holder", "h", "-token", "17", "-secret", cliSecret, "-http-addr", srv.URL)
		if got.code != exitError || !strings.Contains(got.stderr, "error: not_holder") || strings.Contains(got.stdout, "Released") {
			t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and the not_holder error", got.code, got.stdout, got.stderr)
		}
		srv.only(t) // a refusal is not retried
	})
}

func TestLeasesRenewLostFails(t *testing.T) {
	srv := answering(t, 404, map[string]any{"error": "lease_lost", "message": "lease scene-01 token 17 is gone", "reason": "expired"})
	got := runCLI(t, "leases", "renew", "scene-01", "-holder", "h", "-token", "17", "-secret", cliSecret, "-http-addr", srv.URL)
	if got.code != exitError || !strings.Contains(got.stderr, "error: lease_lost (expired)") {
		t.Errorf("renew of a lost lease = %d, stderr %q; want 1 and the lease_lost reason", got.code, got.stderr)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// leases revoke -holder with an empty holder is a usage error, not a
// revoke of nothing (or a crash).
func TestLeasesRevokeEmptyHolder(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) })
	got := runCLI(t, "leases", "revoke", "-holder=", "-http-addr", srv.URL)
	if got.code != exitUsage || !strings.Contains(got.stderr, "-holder") {
		t.Errorf("exit code %d, stderr %q; want a usage error naming -holder", got.code, got.stderr)
	}
}

// cliSecret is the lease secret of the tests' renewals and releases.
const cliSecret = "c11c11c11c11c11c11c11c11c11c11c1"

// Renewing or releasing without the lease's secret is refused before any
// request, and says what to do instead: a holder's name and token do not
// make the caller its holder.
func TestLeasesReleaseNeedsTheSecret(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	t.Setenv(envLeaseSecret, "")
	for _, sub := range []string{"renew", "release"} {
		got := runCLI(t, "leases", sub, "scene-01", "-holder", "h", "-token", "17", "-http-addr", srv.URL)
		if got.code != exitUsage || !strings.Contains(got.stderr, "-secret is required") || !strings.Contains(got.stderr, "tenure leases revoke") {
			t.Errorf("%s without -secret = exit %d, stderr %q; want a usage error naming -secret and revoke", sub, got.code, got.stderr)
		}
	}
	srv.mu.Lock()
	n := len(srv.reqs)
	srv.mu.Unlock()
	if n != 0 {
		t.Errorf("the server received %d requests, want none", n)
	}
	// The environment stands in for the flag.
	t.Setenv(envLeaseSecret, cliSecret)
	got := runCLI(t, "leases", "release", "scene-01", "-holder", "h", "-token", "17", "-http-addr", srv.URL)
	if got.code != exitOK {
		t.Fatalf("release with $%s = exit %d, stderr %q", envLeaseSecret, got.code, got.stderr)
	}
	if req := srv.only(t); !strings.Contains(req.Body, `"secret":"`+cliSecret+`"`) {
		t.Errorf("release body = %s, want the secret of $%s", req.Body, envLeaseSecret)
	}
}
