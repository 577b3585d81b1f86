package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/client"
)

// The local routes answer as the contract says on an established leader.
func TestLocalRoutes(t *testing.T) {
	tn := startNode(t)
	acquire(t, tn, "ui/shown-key", "ui-holder-7")

	for _, tc := range []struct {
		name       string
		method     string
		path       string
		wantStatus int
		// check inspects the answer further; nil checks nothing more.
		check func(t *testing.T, r reply)
	}{
		{"readyz", http.MethodGet, "/readyz", 200, func(t *testing.T, r reply) {
			var got client.Readiness
			r.decode(t, &got)
			if !got.Ready || got.Role != "leader" || got.LeaderID != "n1" {
				t.Errorf("got %+v, want ready leader n1", got)
			}
		}},
		{"healthz", http.MethodGet, "/healthz", 200, func(t *testing.T, r reply) {
			var got client.Health
			r.decode(t, &got)
			if got.Status != "ok" {
				t.Errorf("got %v, want status ok", got)
			}
		}},
		{"status", http.MethodGet, "/v1/status", 200, func(t *testing.T, r reply) {
			var got client.NodeStatus
			if err := json.Unmarshal(r.body, &got); err != nil {
				t.Fatalf("decode %s: %v", r.body, err)
			}
			if got.NodeID != "n1" || got.Role != "leader" || got.LeaderID != "n1" || got.LeaderHTTPAddr != tn.addr ||
				got.LastContact != 0 || !got.Ready || got.LastToken != 1 {
				t.Errorf("got %+v, want n1 leading and ready at %s, last contact 0s, last token 1", got, tn.addr)
			}
			if len(got.Servers) != 1 || got.Servers[0].ID != "n1" || got.Servers[0].HTTPAddr != tn.addr || got.Servers[0].Suffrage != "voter" || !got.Servers[0].Leader {
				t.Errorf("got servers %+v, want n1, voter, leader, at %s", got.Servers, tn.addr)
			}
		}},
		{"ui", http.MethodGet, "/ui", 200, func(t *testing.T, r reply) {
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
				t.Errorf("got Content-Type %q, want text/html", ct)
			}
			// The page is a shell whose script reads the API: it names
			// its five views and holds none of the cluster's data.
			for _, want := range []string{"<html", `href="#cluster"`, `href="#leases"`, `href="#groups"`, `href="#workers"`, `href="#events"`, `id="no-leader"`, "/ui/static/page.js"} {
				if !strings.Contains(string(r.body), want) {
					t.Errorf("page does not contain %q:\n%s", want, r.body)
				}
			}
			for _, data := range []string{"ui/shown-key", "ui-holder-7"} {
				if strings.Contains(string(r.body), data) {
					t.Errorf("page contains %q: the shell must hold no data", data)
				}
			}
		}},
		{"root redirects to ui", http.MethodGet, "/", http.StatusFound, func(t *testing.T, r reply) {
			if got := r.header.Get("Location"); got != "/ui" {
				t.Errorf("got Location %q, want /ui", got)
			}
		}},
		{"metrics", http.MethodGet, "/metrics", 200, func(t *testing.T, r reply) {
			if !strings.Contains(string(r.body), "\ntenure_acquisitions_total 1\n") {
				t.Errorf("metrics do not count the acquisition:\n%s", r.body)
			}
		}},
		{"unknown route", http.MethodGet, "/v2/leases", 404, func(t *testing.T, r reply) {
			if e := r.apiErr(t); e.Error != "not_found" {
				t.Errorf("got code %q, want not_found", e.Error)
			}
		}},
		{"lease route without key", http.MethodPut, "/v1/leases/", 400, func(t *testing.T, r reply) {
			if e := r.apiErr(t); e.Error != "invalid_key" || e.Field != "key" {
				t.Errorf("got code %q field %q, want invalid_key on key", e.Error, e.Field)
			}
		}},
		{"no such route", http.MethodGet, "/v1/nothing", 404, func(t *testing.T, r reply) {
			if e := r.apiErr(t); e.Error != "not_found" {
				t.Errorf("got code %q, want not_found", e.Error)
			}
		}},
		{"wrong method on a lease", http.MethodPatch, "/v1/leases/k", 405, func(t *testing.T, r reply) {
			if e := r.apiErr(t); e.Error != "invalid_query" {
				t.Errorf("got code %q, want invalid_query", e.Error)
			}
		}},
		{"wrong method on status", http.MethodPost, "/v1/status", 405, func(t *testing.T, r reply) {
			if e := r.apiErr(t); e.Error != "invalid_query" {
				t.Errorf("got code %q, want invalid_query", e.Error)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, tc.method, tn.url+tc.path, "")
			r.wantStatus(t, tc.method+" "+tc.path, tc.wantStatus)
			if got := r.header.Get("X-Tenure-Leader-Addr"); got != tn.addr {
				t.Errorf("got X-Tenure-Leader-Addr %q, want %q", got, tn.addr)
			}
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

// Reads report how fresh they are; on the leader, last contact is at most
// the moment its applied index trails its own commit index (0, or a few
// milliseconds while an entry is being applied), and a leader is known.
func TestReadHeaders(t *testing.T) {
	tn := startNode(t)
	l := acquire(t, tn, "fresh", "h1")
	for _, path := range []string{"/v1/leases/fresh", "/v1/leases/fresh?stale", "/v1/leases", "/v1/leases?stale=true"} {
		t.Run(path, func(t *testing.T) {
			r := do(t, http.MethodGet, tn.url+path, "")
			r.wantStatus(t, path, http.StatusOK)
			if got := r.index(t); got != l.ModifyIndex {
				t.Errorf("got X-Tenure-Index %d, want %d", got, l.ModifyIndex)
			}
			if got, err := strconv.Atoi(r.header.Get("X-Tenure-Last-Contact")); err != nil || got < 0 || got >= 1000 {
				t.Errorf("got X-Tenure-Last-Contact %q, want 0 or an apply lag of milliseconds on the leader", r.header.Get("X-Tenure-Last-Contact"))
			}
			if got := r.header.Get("X-Tenure-Known-Leader"); got != "true" {
				t.Errorf("got X-Tenure-Known-Leader %q, want true", got)
			}
		})
	}
}
