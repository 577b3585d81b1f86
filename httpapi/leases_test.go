package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
)

// Release takes holder and token from the query or from a JSON body, frees
// the key, and is idempotent.
func TestRelease(t *testing.T) {
	tn := startNode(t)
	for _, tc := range []struct {
		name string
		// req returns the path suffix (after the key) and the body.
		req func(holder string, token uint64) (string, string)
	}{
		{"query", func(h string, tok uint64) (string, string) { return fmt.Sprintf("?holder=%s&token=%d", h, tok), "" }},
		{"body", func(h string, tok uint64) (string, string) {
			return "", fmt.Sprintf(`{"holder":%q,"token":%d}`, h, tok)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "release-" + tc.name
			l := acquire(t, tn, key, "h1")
			suffix, body := tc.req("h1", l.Token)
			url := tn.url + "/v1/leases/" + key + suffix

			r := do(t, http.MethodDelete, url, body)
			r.wantStatus(t, "release", http.StatusNoContent)
			if got := r.header.Get(client.HeaderRelease); got != "freed" {
				t.Errorf("release: %s = %q, want freed", client.HeaderRelease, got)
			}
			got := do(t, http.MethodGet, tn.url+"/v1/leases/"+key, "")
			got.wantStatus(t, "get after release", http.StatusOK)
			if gl := got.lease(t); gl.State != "free" || gl.Reason != "released" || gl.Holder != "h1" || gl.Token != l.Token {
				t.Errorf("got %+v, want free, released, holder h1, token %d", gl, l.Token)
			}

			r = do(t, http.MethodDelete, url, body)
			r.wantStatus(t, "second release", http.StatusNoContent)
			if got := r.header.Get(client.HeaderRelease); got != "gone" {
				t.Errorf("second release: %s = %q, want gone", client.HeaderRelease, got)
			}

			// Another holder can take the key now.
			acquire(t, tn, key, "h2")
		})
	}
}

// A release by someone who never held the lease leaves it held and says
// so: 409 not_holder with the current lease.
func TestReleaseByOtherHolderKeepsLease(t *testing.T) {
	tn := startNode(t)
	l := acquire(t, tn, "kept", "h1")
	for _, tc := range []struct {
		name   string
		holder string
		token  uint64
	}{
		{"other holder", "h2", l.Token},
		{"unknown token", "h1", l.Token + 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, http.MethodDelete, fmt.Sprintf("%s/v1/leases/kept?holder=%s&token=%d", tn.url, tc.holder, tc.token), "")
			r.wantStatus(t, "release", http.StatusConflict)
			if e := r.apiErr(t); e.Error != wire.CodeNotHolder || e.Lease == nil || e.Lease.Holder != "h1" || e.Lease.Token != l.Token {
				t.Errorf("error body = %+v, want not_holder with the lease of h1", e)
			}
			got := do(t, http.MethodGet, tn.url+"/v1/leases/kept", "").lease(t)
			if got.State != "held" || got.Holder != "h1" || got.Token != l.Token {
				t.Errorf("got %+v, want still held by h1 under token %d", got, l.Token)
			}
		})
	}
}

// Release and revoke refuse requests that break the rules.
func TestReleaseAndRevokeErrors(t *testing.T) {
	tn := startNode(t)
	checkRefusals(t, tn.url, []refusal{
		{"release without token", http.MethodDelete, "/v1/leases/k?holder=h1", "", 400, "invalid_token", "token", ""},
		{"release token not a number", http.MethodDelete, "/v1/leases/k?holder=h1&token=x", "", 400, "invalid_token", "token", ""},
		{"release without holder", http.MethodDelete, "/v1/leases/k?token=3", "", 400, "invalid_holder", "holder", ""},
		{"release body unknown field", http.MethodDelete, "/v1/leases/k", `{"holder":"h1","token":1,"force":true}`, 400, "invalid_body", "force", ""},
		{"release bad key", http.MethodDelete, "/v1/leases/a%20b?holder=h1&token=1", "", 400, "invalid_key", "key", ""},
		{"revoke never seen", http.MethodPost, "/v1/revoke/never-seen", "", 404, "not_found", "", ""},
		{"revoke bad key", http.MethodPost, "/v1/revoke/a%20b", "", 400, "invalid_key", "key", ""},
		{"revoke bad force", http.MethodPost, "/v1/revoke/k?force=yes", "", 400, "invalid_query", "force", ""},
		{"revoke by holder without holder", http.MethodPost, "/v1/revoke", "", 400, "invalid_holder", "holder", ""},
		{"revoke by empty holder", http.MethodPost, "/v1/revoke?holder=", "", 400, "invalid_holder", "holder", ""},
		{"control bad force", http.MethodPut, "/v1/controls/k?force=2", `{"disabled":true}`, 400, "invalid_query", "force", ""},
	})
}

// Revoke ends a lease whoever holds it: the answer says when the key
// frees, the holder's renewals are refused at once and learn why, and the
// key stays held until then. A second revoke answers the same lease.
func TestRevoke(t *testing.T) {
	tn := startNode(t)
	l := acquire(t, tn, "revoked", "h1")
	for _, name := range []string{"revoke", "second revoke"} {
		r := do(t, http.MethodPost, tn.url+"/v1/revoke/revoked", "")
		r.wantStatus(t, name, http.StatusOK)
		var out client.RevokeResult
		r.decode(t, &out)
		if len(out.Revoked) != 1 || out.Revoked[0].Key != "revoked" || out.Revoked[0].Token != l.Token || out.Revoked[0].Holder != "h1" ||
			out.Revoked[0].Forced || out.Revoked[0].Reason != "revoked" || out.Revoked[0].FreesIn <= 0 || out.Revoked[0].FreesIn > 30*time.Second {
			t.Errorf("%s answered %+v, want h1's lease, not forced, freeing within its ttl", name, out.Revoked)
		}
	}
	r := do(t, http.MethodPost, tn.url+"/v1/renew/revoked", fmt.Sprintf(`{"holder":"h1","token":%d}`, l.Token))
	r.wantStatus(t, "renew after revoke", http.StatusNotFound)
	if e := r.apiErr(t); e.Error != "lease_lost" || e.Reason != "revoked" {
		t.Errorf("got code %q reason %q, want lease_lost revoked", e.Error, e.Reason)
	}
	r = do(t, http.MethodPut, tn.url+"/v1/leases/revoked", `{"holder":"h2","ttl":"10s"}`)
	r.wantStatus(t, "acquire of a revoked key before its deadline", http.StatusConflict)
	r = do(t, http.MethodGet, tn.url+"/v1/leases/revoked", "")
	r.wantStatus(t, "read of a revoked lease", http.StatusOK)
	if got := r.lease(t); !got.Held() || got.Ending != client.ReasonRevoked {
		t.Errorf("revoked lease reads as %s, ending %q; want held, ending revoked", got.State, got.Ending)
	}

	// Forced: freed at once, and the next acquirer gets it.
	r = do(t, http.MethodPost, tn.url+"/v1/revoke/revoked?force=true", "")
	r.wantStatus(t, "forced revoke", http.StatusOK)
	var out client.RevokeResult
	r.decode(t, &out)
	if len(out.Revoked) != 1 || !out.Revoked[0].Forced || out.Revoked[0].FreesIn != 0 {
		t.Errorf("forced revoke answered %+v, want one forced lease", out.Revoked)
	}
	acquire(t, tn, "revoked", "h2")
}

// Revoke by holder ends every lease of that holder and no other.
func TestRevokeHolder(t *testing.T) {
	tn := startNode(t)
	acquire(t, tn, "b", "h1")
	acquire(t, tn, "a", "h1")
	other := acquire(t, tn, "c", "h2")
	r := do(t, http.MethodPost, tn.url+"/v1/revoke?holder=h1", "")
	r.wantStatus(t, "revoke by holder", http.StatusOK)
	var out client.RevokeResult
	r.decode(t, &out)
	if len(out.Revoked) != 2 || out.Revoked[0].Key != "a" || out.Revoked[1].Key != "b" {
		t.Fatalf("revoke of h1 answered %+v, want a and b", out.Revoked)
	}
	r = do(t, http.MethodPost, tn.url+"/v1/renew/c", fmt.Sprintf(`{"holder":"h2","token":%d}`, other.Token))
	r.wantStatus(t, "renew of another holder's lease", http.StatusOK)
	r = do(t, http.MethodPost, tn.url+"/v1/revoke?holder=nobody", "")
	r.wantStatus(t, "revoke of a holder without leases", http.StatusOK)
	r.decode(t, &out)
	if len(out.Revoked) != 0 {
		t.Errorf("revoke of nobody answered %+v, want none", out.Revoked)
	}
}

// Renewing one lease answers the lease, or 404 lease_lost with the reason.
func TestRenewOne(t *testing.T) {
	tn := startNode(t)
	live := acquire(t, tn, "live", "h1")
	gone := released(t, tn, "gone", "h1")
	taken := released(t, tn, "taken", "h1")
	acquire(t, tn, "taken", "h2")

	for _, tc := range []struct {
		name       string
		key        string
		body       string
		wantStatus int
		wantCode   string
		wantReason string
	}{
		{"held", "live", fmt.Sprintf(`{"holder":"h1","token":%d}`, live.Token), 200, "", ""},
		{"released", "gone", fmt.Sprintf(`{"holder":"h1","token":%d}`, gone.Token), 404, "lease_lost", "released"},
		{"taken by another holder", "taken", fmt.Sprintf(`{"holder":"h1","token":%d}`, taken.Token), 404, "lease_lost", "superseded"},
		{"never held", "never", `{"holder":"h1","token":1}`, 404, "lease_lost", "unknown"},
		{"wrong holder", "live", fmt.Sprintf(`{"holder":"h9","token":%d}`, live.Token), 404, "lease_lost", "not_holder"},
		{"a token the key never had", "live", fmt.Sprintf(`{"holder":"h1","token":%d}`, live.Token+100), 404, "lease_lost", "not_holder"},
		{"zero token", "live", `{"holder":"h1","token":0}`, 400, "invalid_token", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, http.MethodPost, tn.url+"/v1/renew/"+tc.key, tc.body)
			r.wantStatus(t, "renew", tc.wantStatus)
			if tc.wantStatus == http.StatusOK {
				got := r.lease(t)
				if got.Key != tc.key || got.State != "held" || got.Token != live.Token || !got.HasExpiresIn {
					t.Errorf("got %+v, want the held lease with its deadline", got)
				}
				return
			}
			if e := r.apiErr(t); e.Error != tc.wantCode || e.Reason != tc.wantReason {
				t.Errorf("got code %q reason %q, want %q %q", e.Error, e.Reason, tc.wantCode, tc.wantReason)
			}
		})
	}
}

// Renewing many answers one result per lease, in order: the live ones with
// their lease, the lost ones with the reason.
func TestRenewMany(t *testing.T) {
	tn := startNode(t)
	a := acquire(t, tn, "many/a", "h1")
	b := released(t, tn, "many/b", "h1")
	c := acquire(t, tn, "many/c", "h1")

	body := fmt.Sprintf(`{"holder":"h1","leases":[{"key":"many/a","token":%d},{"key":"many/b","token":%d},{"key":"many/c","token":%d}]}`, a.Token, b.Token, c.Token)
	r := do(t, http.MethodPost, tn.url+"/v1/renew", body)
	r.wantStatus(t, "renew many", http.StatusOK)
	var out struct {
		Results []wire.RenewResultBody `json:"results"`
	}
	r.decode(t, &out)
	want := []struct {
		key    string
		token  uint64
		ok     bool
		reason string
	}{
		{"many/a", a.Token, true, ""},
		{"many/b", b.Token, false, "released"},
		{"many/c", c.Token, true, ""},
	}
	if len(out.Results) != len(want) {
		t.Fatalf("got %d results, want %d: %s", len(out.Results), len(want), r.body)
	}
	for i, w := range want {
		got := out.Results[i]
		if got.Key != w.key || got.Token != w.token || got.OK != w.ok || got.Reason != w.reason {
			t.Errorf("result %d: got key %q token %d ok %v reason %q, want %q %d %v %q", i, got.Key, got.Token, got.OK, got.Reason, w.key, w.token, w.ok, w.reason)
		}
		switch {
		case w.ok && (got.Lease == nil || got.Lease.Key != w.key || got.Lease.State != "held" || got.Error != ""):
			t.Errorf("result %d: got lease %+v error %q, want the held lease and no error", i, got.Lease, got.Error)
		case !w.ok && (got.Lease != nil || got.Error != "lease_lost"):
			t.Errorf("result %d: got lease %+v error %q, want no lease and lease_lost", i, got.Lease, got.Error)
		}
	}

	// Brief: the same outcomes without the renewed leases, and the lease
	// really renewed (its deadline restarted).
	prev := out.Results[0].Lease.RenewedAt
	time.Sleep(20 * time.Millisecond)
	brief := fmt.Sprintf(`{"holder":"h1","leases":[{"key":"many/a","token":%d},{"key":"many/b","token":%d}],"brief":true}`, a.Token, b.Token)
	r = do(t, http.MethodPost, tn.url+"/v1/renew", brief)
	r.wantStatus(t, "brief renew many", http.StatusOK)
	out.Results = nil
	r.decode(t, &out)
	if len(out.Results) != 2 || !out.Results[0].OK || out.Results[0].Lease != nil || out.Results[0].Key != "many/a" ||
		out.Results[1].OK || out.Results[1].Reason != "released" || strings.Contains(string(r.body), `"lease"`) {
		t.Errorf("brief answer: %s, want many/a ok and many/b released, no lease", r.body)
	}
	g := do(t, http.MethodGet, tn.url+"/v1/leases/many/a", "")
	g.wantStatus(t, "get many/a", http.StatusOK)
	if got := g.lease(t); !got.RenewedAt.After(prev) {
		t.Errorf("many/a after a brief renewal: renewed_at %v, want after the previous renewal's %v", got.RenewedAt, prev)
	}

	for _, tc := range []struct {
		name     string
		body     string
		wantCode string
	}{
		{"no leases", `{"holder":"h1","leases":[]}`, "invalid_body"},
		{"brief not a boolean", fmt.Sprintf(`{"holder":"h1","leases":[{"key":"many/a","token":%d}],"brief":"yes"}`, a.Token), "invalid_body"},
		{"no holder", fmt.Sprintf(`{"leases":[{"key":"many/a","token":%d}]}`, a.Token), "invalid_holder"},
		{"zero token", `{"holder":"h1","leases":[{"key":"many/a","token":0}]}`, "invalid_token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, http.MethodPost, tn.url+"/v1/renew", tc.body)
			r.wantStatus(t, "renew many", http.StatusBadRequest)
			if e := r.apiErr(t); e.Error != tc.wantCode {
				t.Errorf("got code %q (%s), want %q", e.Error, e.Message, tc.wantCode)
			}
		})
	}
}

// Acquire answers 201 for a new grant, 200 with the same token when the
// holder already has it, and 409 held with the current lease otherwise.
func TestAcquire(t *testing.T) {
	tn := startNode(t)
	r := do(t, http.MethodPut, tn.url+"/v1/leases/acq", `{"holder":"h1","ttl":"30s","metadata":{"zone":"a"}}`)
	r.wantStatus(t, "first acquire", http.StatusCreated)
	first := r.lease(t)
	if first.Key != "acq" || first.Holder != "h1" || first.TTL != 30*time.Second || first.State != "held" || first.Metadata["zone"] != "a" || first.Token == 0 {
		t.Fatalf("got %+v, want a held lease for h1 with ttl 30s and zone=a", first)
	}

	r = do(t, http.MethodPut, tn.url+"/v1/leases/acq", `{"holder":"h1","ttl":"30s"}`)
	r.wantStatus(t, "acquire again by the holder", http.StatusOK)
	if again := r.lease(t); again.Token != first.Token {
		t.Errorf("got token %d on the repeated acquire, want the same %d", again.Token, first.Token)
	}

	r = do(t, http.MethodPut, tn.url+"/v1/leases/acq", `{"holder":"h2","ttl":"30s"}`)
	r.wantStatus(t, "acquire by another holder", http.StatusConflict)
	e := r.apiErr(t)
	if e.Error != "held" || e.Lease == nil || e.Lease.Holder != "h1" || e.Lease.Token != first.Token {
		t.Errorf("got code %q lease %+v, want held with h1's lease under token %d", e.Error, e.Lease, first.Token)
	}
}

// Keys may hold slashes and dots in any arrangement; they reach the server
// as they are, without a redirect or path cleaning.
func TestKeysWithSlashesAndDots(t *testing.T) {
	tn := startNode(t)
	for _, key := range []string{
		"partitions/17",
		"a/../b",
		"a//b",
		"a/./b",
		"trailing/",
		"..",
		".",
		"/leading",
		"svc:web.eu-1_a",
	} {
		t.Run(strings.ReplaceAll(key, "/", "|"), func(t *testing.T) {
			url := tn.url + "/v1/leases/" + key
			r := do(t, http.MethodPut, url, `{"holder":"h1","ttl":"30s"}`)
			r.wantStatus(t, "acquire", http.StatusCreated)
			l := r.lease(t)
			if l.Key != key {
				t.Fatalf("acquire: got key %q, want %q", l.Key, key)
			}
			r = do(t, http.MethodGet, url, "")
			r.wantStatus(t, "get", http.StatusOK)
			if got := r.lease(t); got.Key != key || got.Token != l.Token {
				t.Fatalf("get: got key %q token %d, want %q %d", got.Key, got.Token, key, l.Token)
			}
			r = do(t, http.MethodGet, tn.url+"/v1/leases?prefix="+key, "")
			r.wantStatus(t, "list", http.StatusOK)
			var list wire.LeaseList
			r.decode(t, &list)
			if len(list.Leases) == 0 || list.Leases[0].Key != key {
				t.Errorf("list with prefix %q: got %+v, want %q first", key, list.Leases, key)
			}
			r = do(t, http.MethodPost, tn.url+"/v1/renew/"+key, fmt.Sprintf(`{"holder":"h1","token":%d}`, l.Token))
			r.wantStatus(t, "renew", http.StatusOK)
			release(t, tn, key, "h1", l.Token)
		})
	}

	// Escapes are not decoded: a key outside the alphabet stays outside it.
	t.Run("escaped byte", func(t *testing.T) {
		r := do(t, http.MethodPut, tn.url+"/v1/leases/a%20b", `{"holder":"h1","ttl":"30s"}`)
		r.wantRefused(t, "acquire", http.StatusBadRequest, "invalid_key", "key", "")
	})
}

// TestLeaseAnswersAsTheEncoderWritesThem: a lease answer written without
// the encoder is byte for byte what json.Encoder writes for it.
func TestLeaseAnswersAsTheEncoderWritesThem(t *testing.T) {
	at := time.Date(2026, 11, 30, 1, 2, 3, 456789, time.UTC)
	for _, l := range []*wire.LeaseInfo{
		{},
		{Key: "k", Holder: "h", Token: 7, TTL: 10 * time.Second, State: wire.StateHeld, HasExpiresIn: true, ExpiresIn: 9 * time.Second,
			AcquiredAt: at, RenewedAt: at.Add(time.Second), ModifyIndex: 42},
		{Key: "a/b <&> \"q\" \\ é \u2028 \x01", Holder: "worker\t1", Token: 1<<64 - 1, State: wire.StateFree, Reason: wire.ReasonExpired,
			Metadata: map[string]string{"z": "1", "a": "<b>", "é": "\xff"}, Secret: "s"},
		{Key: "k", Holder: "h", Ending: wire.ReasonRevoked, TTL: time.Millisecond},
	} {
		rec := httptest.NewRecorder()
		writeJSON(rec, http.StatusOK, l)
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(l); err != nil {
			t.Fatal(err)
		}
		if rec.Body.String() != want.String() {
			t.Errorf("lease %+v:\nwritten %s\nencoder %s", l, rec.Body, want.String())
		}
	}
}
