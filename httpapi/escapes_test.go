package httpapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

// rawRequest sends one request as the bytes given (a Go client refuses to
// send a bad escape) and returns the answer.
func rawRequest(t *testing.T, addr, method, target, body string) (*http.Response, []byte) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", method, target, len(body), body)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// A bad percent-escape is refused with the JSON error shape and the place
// it was found. In the query it used to be dropped without a word:
// "?prefix=%zz" listed every lease as if no prefix had been given.
func TestBadPercentEscapes(t *testing.T) {
	tn := startNode(t)
	do(t, "PUT", tn.url+"/v1/leases/other", `{"holder":"h","ttl":"10s"}`).wantStatus(t, "acquire", http.StatusCreated)

	// The server's own listener, in front of a plain handler: a path that
	// net/http cannot parse never reaches a handler.
	srv, err := NewHTTPServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"path": r.URL.Path})
	}), DefaultConnLimits(time.Minute), nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(Listener(ln))
	t.Cleanup(func() { srv.Close() })
	listener := ln.Addr().String()

	for _, tt := range []struct {
		name, addr, method, target, body, field string
	}{
		{"list prefix", tn.addr, "GET", "/v1/leases?prefix=%zz", "", "prefix"},
		{"release holder", tn.addr, "DELETE", "/v1/leases/k?holder=%zz&token=1", "", "holder"},
		{"truncated escape in a value", tn.addr, "GET", "/v1/events?prefix=a%2", "", "prefix"},
		{"semicolon separator", tn.addr, "GET", "/v1/leases?prefix=a;b", "", "query"},
		{"path of a key", listener, "GET", "/v1/leases/%zz", "", "path"},
		{"path of an acquire", listener, "PUT", "/v1/leases/a%zzb", `{"holder":"h","ttl":"10s"}`, "path"},
		{"path of a group", listener, "GET", "/v1/groups/%g1", "", "path"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, b := rawRequest(t, tt.addr, tt.method, tt.target, tt.body)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("got %d %s, want 400", resp.StatusCode, b)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q, want JSON", ct)
			}
			var e wire.ErrorBody
			if err := json.Unmarshal(b, &e); err != nil {
				t.Fatalf("answer %q is not the JSON error shape: %v", b, err)
			}
			if e.Error != wire.CodeInvalidQuery || e.Field != tt.field || e.Message == "" {
				t.Errorf("got %+v, want code %s field %s", e, wire.CodeInvalidQuery, tt.field)
			}
		})
	}

	// The rewrite leaves every well-formed answer alone.
	resp, b := rawRequest(t, listener, "GET", "/v1/leases/a%20b", "")
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"path":"/v1/leases/a b"`) {
		t.Errorf("a valid request through the listener: %d %s", resp.StatusCode, b)
	}
	resp, b = rawRequest(t, tn.addr, "GET", "/v1/leases/a%20b", "")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), wire.CodeInvalidKey) {
		t.Errorf("a well-escaped bad key: %d %s, want 400 invalid_key", resp.StatusCode, b)
	}
	// The refusal names the character as typed, not the byte of its
	// escaping in the URL.
	for target, want := range map[string]string{"/v1/leases/a%20b": `byte 1 (' ')`, "/v1/leases/caf%C3%A9": `byte 3 ('é')`} {
		_, b := rawRequest(t, tn.addr, "GET", target, "")
		var e wire.ErrorBody
		if err := json.Unmarshal(b, &e); err != nil || e.Error != wire.CodeInvalidKey || !strings.Contains(e.Message, want) {
			t.Errorf("GET %s: %s, want invalid_key naming %s", target, b, want)
		}
	}
}
