package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// victimSecret is the lease secret of the leases a victim token holds in
// the tests of what other tokens learn of them and can do to them.
const victimSecret = "v1c71m5ec2e7v1c71m5ec2e7v1c71m5e"

// acquireAsVictim acquires key at url with the ACL token secret acl, as
// holder worker-1 with metadata addr 10.0.0.1:80 and the lease secret
// victimSecret, and returns the new lease.
func acquireAsVictim(t *testing.T, acl, url, key string) client.LeaseInfo {
	t.Helper()
	r := rawAs(t, acl, "PUT", url+"/v1/leases/"+key, `{"holder":"worker-1","ttl":"30s","metadata":{"addr":"10.0.0.1:80"},"secret":"`+victimSecret+`"}`)
	r.wantStatus(t, "victim acquires "+key, http.StatusCreated)
	return r.lease(t)
}

// TestConflictAnswersShowTheLeaseOnlyToATokenThatReadsTheKey: a token
// with write on a prefix and no read (a worker that only acquires) is
// refused GET of a lease, so the 409 answers of an acquire of a held key
// and of a release under another holder's name, and the leases a revoke
// or a key control ends, do not show it the holder, token or metadata
// either; the codes stay (the Go client still matches ErrHeld with no
// lease), and a token that reads the key still gets the lease.
func TestConflictAnswersShowTheLeaseOnlyToATokenThatReadsTheKey(t *testing.T) {
	e := startACL(t, 1)
	url := e.leader().url
	e.policy(t, "victim", rule("parts/", client.RightRead, client.RightWrite))
	e.policy(t, "writeonly", rule("parts/", client.RightWrite))
	e.policy(t, "operator", rule("parts/", client.RightRevoke, client.RightGroups))
	victim := e.token(t, client.ACLTokenSpec{Policies: []string{"victim"}}).SecretID
	attacker := e.token(t, client.ACLTokenSpec{Policies: []string{"writeonly"}}).SecretID
	operator := e.token(t, client.ACLTokenSpec{Policies: []string{"operator"}}).SecretID
	const mine = "a77ac3e2a77ac3e2a77ac3e2a77ac3e2"
	tok := acquireAsVictim(t, victim, url, "parts/1").Token
	rawAs(t, attacker, "GET", url+"/v1/leases/parts/1", "").wantStatus(t, "attacker reads", http.StatusForbidden)

	var leaks []string
	leaked := func(what string, r reply) {
		b := string(r.body)
		if strings.Contains(b, "worker-1") || strings.Contains(b, "10.0.0.1:80") || strings.Contains(b, fmt.Sprintf(`"token":%d`, tok)) ||
			strings.Contains(b, fmt.Sprintf("token %d", tok)) {
			leaks = append(leaks, fmt.Sprintf("%s: %d %s", what, r.status, strings.TrimSpace(b)))
		}
	}
	for _, a := range []struct{ what, method, path, body, code, field string }{
		{"acquire of the held key", "PUT", "/v1/leases/parts/1", `{"holder":"me","ttl":"30s","secret":"` + mine + `"}`, wire.CodeHeld, ""},
		{"acquire under the holder's name", "PUT", "/v1/leases/parts/1", `{"holder":"worker-1","ttl":"30s","secret":"` + mine + `"}`, wire.CodeHeld, "secret"},
		{"release under another name", "DELETE", "/v1/leases/parts/1", fmt.Sprintf(`{"holder":"me","token":%d,"secret":"%s"}`, tok, mine), wire.CodeNotHolder, ""},
		{"release with a guessed token", "DELETE", "/v1/leases/parts/1", fmt.Sprintf(`{"holder":"me","token":%d,"secret":"%s"}`, tok+100, mine), wire.CodeNotHolder, ""},
	} {
		r := rawAs(t, attacker, a.method, url+a.path, a.body)
		r.wantRefused(t, a.what, http.StatusConflict, a.code, a.field, "")
		if e := r.apiErr(t); e.Lease != nil {
			t.Errorf("%s: lease %+v answered to a token without read", a.what, e.Lease)
		}
		leaked(a.what, r)
	}

	// The Go client still tells held from the rest, with no lease.
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{url}
	cfg.Token = attacker
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = cl.Leases().Acquire(context.Background(), "parts/1", client.AcquireRequest{Holder: "me", TTL: 30 * time.Second})
	var ae *client.APIError
	if !errors.Is(err, client.ErrHeld) || !errors.As(err, &ae) || ae.Lease != nil {
		t.Errorf("client acquire of the held key as a writer: %v (%+v), want ErrHeld with no lease", err, ae)
	}

	// A token that reads the key gets the lease in the same answer.
	r := rawAs(t, victim, "PUT", url+"/v1/leases/parts/1", `{"holder":"me","ttl":"30s","secret":"`+mine+`"}`)
	r.wantRefused(t, "acquire of the held key by a reader", http.StatusConflict, wire.CodeHeld, "", "")
	if l := r.apiErr(t).Lease; l == nil || l.Holder != "worker-1" || l.Token != tok {
		t.Errorf("acquire of the held key by a reader: lease %+v, want worker-1's token %d", l, tok)
	}

	// Revoke and key controls, by a token with revoke and groups but not read.
	r = rawAs(t, operator, "POST", url+"/v1/revoke/parts/1", "")
	r.wantStatus(t, "revoke by an operator without read", http.StatusOK)
	var rv client.RevokeResult
	r.decode(t, &rv)
	if len(rv.Revoked) != 1 || rv.Revoked[0].Key != "parts/1" || rv.Revoked[0].Reason != client.ReasonRevoked {
		t.Errorf("revoke answered %+v, want the lease of parts/1 revoked", rv.Revoked)
	}
	leaked("revoke", r)
	tok = acquireAsVictim(t, victim, url, "parts/2").Token
	r = rawAs(t, operator, "PUT", url+"/v1/controls/parts/2", `{"disabled":true}`)
	r.wantStatus(t, "disable by an operator without read", http.StatusOK)
	leaked("disable (ended)", r)
	tok = acquireAsVictim(t, victim, url, "parts/3").Token
	r = rawAs(t, operator, "PATCH", url+"/v1/controls/parts/3", `{"prohibit":["worker-1"]}`)
	r.wantStatus(t, "prohibit by an operator without read", http.StatusOK)
	var ctl client.KeyControl
	r.decode(t, &ctl)
	if len(ctl.Ended) != 1 || ctl.Ended[0].Holder != "" || ctl.Ended[0].Token != 0 {
		leaks = append(leaks, fmt.Sprintf("prohibit (ended): %+v", ctl.Ended))
	}
	if len(leaks) > 0 {
		t.Errorf("a token without read on parts/ learned the lease:\n%s", strings.Join(leaks, "\n"))
	}
}

// TestMembersShowAWorkersHolderAndGroupsOnlyToAReaderOfEveryKey: GET
// /v1/members needs any valid token. A token with read on mine/ only is
// refused GET /v1/workers (read on every name), and the group and
// assignment answers hide the keys of other/ from it, so the members list
// must not tell it that worker w-other holds leases of group other as
// holder other-holder-1: it still lists the servers in full (workers find
// them there) and the worker by name, without holder and groups. A token
// that reads every key sees them. The content hash is of what each token
// sees, so a blocking read waits on that.
func TestMembersShowAWorkersHolderAndGroupsOnlyToAReaderOfEveryKey(t *testing.T) {
	e := bootstrapACL(t, startACLClusterWith(t, 1, inproc.Options{Gossip: true, Serve: serveAPI}))
	url := e.leader().url
	e.policy(t, "mine", rule("mine/", client.RightRead, client.RightWrite))
	mine := e.token(t, client.ACLTokenSpec{Policies: []string{"mine"}}).SecretID

	meta, _ := json.Marshal(map[string]any{"role": "worker", "id": "w-other", "holder": "other-holder-1", "groups": []string{"other"}, "capacity": 1})
	joinGossip(t, "w-other", meta, e.cluster.GossipAddr(0))

	rawAs(t, mine, "GET", url+"/v1/workers", "").wantStatus(t, "workers list with read on mine/", http.StatusForbidden)
	harness.WaitUntil(t, 10*time.Second, "the server to see w-other", func() bool {
		return strings.Contains(string(rawAs(t, e.boot, "GET", url+"/v1/members", "").body), "w-other")
	})
	r := rawAs(t, mine, "GET", url+"/v1/members", "")
	r.wantStatus(t, "members with read on mine/", http.StatusOK)
	if strings.Contains(string(r.body), "other-holder-1") || strings.Contains(string(r.body), `"other"`) {
		t.Errorf("a token with read on mine/ only learned another worker's holder and groups: %s", strings.TrimSpace(string(r.body)))
	}
	var seen wire.MemberList
	r.decode(t, &seen)
	var server, worker bool
	for _, m := range seen.Members {
		server = server || (m.Role == "server" && m.Meta.HTTPAddr != "" && m.Addr != "")
		worker = worker || (m.Name == "w-other" && m.Meta.ID == "w-other")
	}
	if !server || !worker {
		t.Errorf("members with read on mine/: %+v, want the server in full and w-other by name", seen.Members)
	}
	hash := r.header.Get(client.HeaderContentHash)
	if want := contentHash(seen); hash != want {
		t.Errorf("content hash %s, want %s: the hash of the answer this token got", hash, want)
	}
	all := rawAs(t, e.boot, "GET", url+"/v1/members", "")
	if !strings.Contains(string(all.body), "other-holder-1") || !strings.Contains(string(all.body), `"groups":["other"]`) {
		t.Errorf("a token that reads every key got no holder and groups of w-other: %s", all.body)
	}
	if all.header.Get(client.HeaderContentHash) == hash {
		t.Errorf("the two tokens got the same content hash %s for different answers", hash)
	}
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
	const secret = victimSecret
	const guess = "0123456789abcdef0123456789abcdef"

	if got := acquireAsVictim(t, victim, url, "parts/1"); got.Secret != secret {
		t.Fatalf("acquire answered secret %q, want the request's", got.Secret)
	}
	// What a reader learns: holder and token, never the secret.
	r := rawAs(t, attacker, "GET", url+"/v1/leases/parts/1", "")
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
