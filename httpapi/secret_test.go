package httpapi

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
)

// rawAs makes one request with the ACL token secret acl and the body as
// given: no lease secret is added (send adds one).
func rawAs(t *testing.T, acl, method, url, body string) reply {
	t.Helper()
	h := http.Header{}
	if acl != "" {
		h.Set(client.HeaderToken, acl)
	}
	r, err := sendRaw(method, url, body, h)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

// Issue 24, finding 5: a token with write on a prefix and no holder
// binding (the default of tenure acl token create) knows a live lease's
// holder and token from a read. With them alone it can neither acquire
// the lease again (and so get its token back or replace its metadata),
// nor renew it, nor release it; the lease stays as it was. Its acquirer,
// with the secret, keeps all of that; no read shows the secret.
func TestLeaseSecretNotHolderNameMakesTheHolder(t *testing.T) {
	e := startACL(t, 1)
	url := e.leader().url
	e.policy(t, "parts", rule("parts/", client.RightRead, client.RightWrite))
	victim := e.token(t, client.ACLTokenSpec{Policies: []string{"parts"}}).SecretID
	attacker := e.token(t, client.ACLTokenSpec{Policies: []string{"parts"}}).SecretID
	const secret = "v1c71m5ec2e7v1c71m5ec2e7v1c71m5e"
	const guess = "0123456789abcdef0123456789abcdef"

	r := rawAs(t, victim, "PUT", url+"/v1/leases/parts/1", `{"holder":"worker-1","ttl":"30s","metadata":{"addr":"10.0.0.1:80"},"secret":"`+secret+`"}`)
	r.wantStatus(t, "victim acquires", http.StatusCreated)
	if got := r.lease(t); got.Secret != secret {
		t.Fatalf("acquire answered secret %q, want the request's", got.Secret)
	}
	// What a reader learns: holder and token, never the secret.
	r = rawAs(t, attacker, "GET", url+"/v1/leases/parts/1", "")
	r.wantStatus(t, "attacker reads", http.StatusOK)
	seen := r.lease(t)
	if seen.Holder != "worker-1" || seen.Secret != "" || strings.Contains(string(r.body), secret) {
		t.Fatalf("read = %s, want holder worker-1 and no secret", r.body)
	}

	tok := seen.Token
	attacks := []struct {
		what, method, path, body string
		status                   int
		code                     string
	}{
		{"acquire under the holder's name", "PUT", "/v1/leases/parts/1", `{"holder":"worker-1","ttl":"30s"}`, 409, wire.CodeHeld},
		{"acquire with a guessed secret", "PUT", "/v1/leases/parts/1", `{"holder":"worker-1","ttl":"30s","secret":"` + guess + `"}`, 409, wire.CodeHeld},
		{"replace the metadata", "PUT", "/v1/leases/parts/1", `{"holder":"worker-1","ttl":"30s","metadata":{"addr":"6.6.6.6:80"}}`, 409, wire.CodeHeld},
		{"renew", "POST", "/v1/renew/parts/1", fmt.Sprintf(`{"holder":"worker-1","token":%d}`, tok), 400, wire.CodeInvalidSecret},
		{"renew with a guessed secret", "POST", "/v1/renew/parts/1", fmt.Sprintf(`{"holder":"worker-1","token":%d,"secret":"%s"}`, tok, guess), 409, wire.CodeWrongSecret},
		{"bulk renew", "POST", "/v1/renew", fmt.Sprintf(`{"holder":"worker-1","leases":[{"key":"parts/1","token":%d}]}`, tok), 400, wire.CodeInvalidSecret},
		{"release", "DELETE", fmt.Sprintf("/v1/leases/parts/1?holder=worker-1&token=%d", tok), "", 400, wire.CodeInvalidSecret},
		{"release with a guessed secret", "DELETE", "/v1/leases/parts/1", fmt.Sprintf(`{"holder":"worker-1","token":%d,"secret":"%s"}`, tok, guess), 409, wire.CodeWrongSecret},
	}
	for _, a := range attacks {
		rawAs(t, attacker, a.method, url+a.path, a.body).wantRefused(t, "attacker: "+a.what, a.status, a.code, "secret", "")
	}
	r = rawAs(t, attacker, "POST", url+"/v1/renew", fmt.Sprintf(`{"holder":"worker-1","secret":"%s","leases":[{"key":"parts/1","token":%d}]}`, guess, tok))
	r.wantStatus(t, "attacker bulk renews with a guessed secret", http.StatusOK)
	var bulk wire.RenewManyResults
	r.decode(t, &bulk)
	if len(bulk.Results) != 1 || bulk.Results[0].OK || bulk.Results[0].Error != wire.CodeWrongSecret {
		t.Fatalf("attacker's bulk renewal = %s, want one result refused with %s", r.body, wire.CodeWrongSecret)
	}
	after := rawAs(t, attacker, "GET", url+"/v1/leases/parts/1", "").lease(t)
	if !after.Held() || after.Token != tok || after.ModifyIndex != seen.ModifyIndex || after.Metadata["addr"] != "10.0.0.1:80" {
		t.Fatalf("lease after the attacks = %+v, want it as it was (%+v)", after, seen)
	}

	// The acquirer's retry (same secret) gets the same lease and token.
	r = rawAs(t, victim, "PUT", url+"/v1/leases/parts/1", `{"holder":"worker-1","ttl":"30s","secret":"`+secret+`"}`)
	r.wantStatus(t, "victim acquires again", http.StatusOK)
	if got := r.lease(t); got.Token != tok || got.Secret != secret {
		t.Fatalf("retry = token %d secret %q, want token %d and the secret", got.Token, got.Secret, tok)
	}
	rawAs(t, victim, "POST", url+"/v1/renew", fmt.Sprintf(`{"holder":"worker-1","secret":"%s","leases":[{"key":"parts/1","token":%d}]}`, secret, tok)).
		wantStatus(t, "victim renews", http.StatusOK)

	// No read shows the secret: the lease, the list, the events, a backup,
	// the metrics, the server's recent log lines.
	for _, read := range []struct{ acl, path string }{
		{attacker, "/v1/leases/parts/1"}, {attacker, "/v1/leases?prefix=parts/"}, {attacker, "/v1/events?prefix=parts/"}, {e.boot, "/v1/events"},
		{e.boot, "/v1/snapshot"}, {e.boot, "/v1/leases/parts/1?stale"}, {e.boot, "/metrics"}, {e.boot, "/v1/debug/logs"},
	} {
		r := rawAs(t, read.acl, "GET", url+read.path, "")
		r.wantStatus(t, "read "+read.path, http.StatusOK)
		if strings.Contains(string(r.body), secret) || strings.Contains(string(r.body), `"secret"`) {
			t.Errorf("GET %s shows the lease secret: %.300s", read.path, r.body)
		}
	}

	rawAs(t, victim, "DELETE", url+"/v1/leases/parts/1", fmt.Sprintf(`{"holder":"worker-1","token":%d,"secret":"%s"}`, tok, secret)).
		wantStatus(t, "victim releases", http.StatusNoContent)
}

// A raw caller that sends no secret gets one made by the server, in the
// acquire's answer only, and renews and releases with it.
func TestLeaseSecretMadeByTheServer(t *testing.T) {
	url := startCluster(t, 1).leader().url
	r := rawAs(t, "", "PUT", url+"/v1/leases/k", `{"holder":"h","ttl":"30s"}`)
	r.wantStatus(t, "acquire", http.StatusCreated)
	l := r.lease(t)
	if len(l.Secret) != 32 {
		t.Fatalf("acquire without a secret answered secret %q, want 32 hex digits", l.Secret)
	}
	rawAs(t, "", "POST", url+"/v1/renew/k", fmt.Sprintf(`{"holder":"h","token":%d,"secret":"%s"}`, l.Token, l.Secret)).wantStatus(t, "renew", http.StatusOK)
	// Asking again without a secret is another caller's acquisition.
	rawAs(t, "", "PUT", url+"/v1/leases/k", `{"holder":"h","ttl":"30s"}`).wantRefused(t, "acquire again without the secret", 409, wire.CodeHeld, "secret", "")
	rawAs(t, "", "DELETE", fmt.Sprintf("%s/v1/leases/k?holder=h&token=%d&secret=%s", url, l.Token, l.Secret), "").wantStatus(t, "release", http.StatusNoContent)
}
