package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

// notJSON are the routes whose answers are not the API's JSON: the page,
// the metrics, the probes, a snapshot, an event stream.
func notJSON(tpl string) bool {
	switch tpl {
	case "/", "/ui", "/ui/static/{file}", "/metrics", "/healthz", "/readyz", "/v1/operator/snapshot", "/v1/events":
		return true
	}
	return false
}

// fill puts arg into every variable of a route's template: escaped as a
// path segment, except a key, which may hold slashes.
func fill(tpl, arg string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(tpl, '{')
		if i < 0 {
			b.WriteString(tpl)
			return b.String()
		}
		j := strings.IndexByte(tpl[i:], '}')
		b.WriteString(tpl[:i])
		if strings.HasPrefix(tpl[i:], "{key") {
			b.WriteString(arg)
		} else {
			b.WriteString(url.PathEscape(arg))
		}
		tpl = tpl[i+j+1:]
	}
}

// FuzzRoutes drives every route's decoders (path, query and body) with
// arbitrary input against a real one-node cluster. Whatever comes in, the
// server never panics or answers 500, and every answer of the JSON API is
// either a success or the error shape with a documented code (4xx with a
// field or a message) and Retry-After when it says to come back.
//
//	go test ./httpapi -run XXX -fuzz FuzzRoutes -fuzztime 60s
func FuzzRoutes(f *testing.F) {
	routes := routesOf(f)
	seeds := []struct {
		arg, query, body string
	}{
		{"k", "", `{"holder":"h","ttl":"10s"}`},
		{"a/b", "holder=h&token=1", ``},
		{"g", "index=1&wait=10ms&stale=true", `{"keys":["x","y"],"max_per_worker":2}`},
		{"w1", "force=true&prefix=a", `{"draining":false,"holder":"h","leases":[{"key":"k","token":1}]}`},
		{"k%zz", "prefix=%zz", `{"Holder":"h","holder":"h"}`},
		{"", "limit=-1&cursor=\x00", `{"holder":"h\u0000","ttl":"-1s","metadata":{"a":"b","a":"c"}}`},
		{"x", "wait=1h", "\xff\xfe{"},
		{"n1", "", `{"rules":[{"kind":"key","prefix":"","rights":["read"]}],"policies":["p"]}`},
		{"c", "", `{"checks":[{"right":"revoke","key":"k"},{"right":"operator","group":"g"},{"right":"groups","worker":""}]}`},
		{"..", "since=18446744073709551615", `[]`},
		{strings.Repeat("k", 300), "holder=" + strings.Repeat("h", 300), `{"ttl":"1000000h","wait":"1000000h"}`},
	}
	for i := range routes {
		for _, s := range seeds {
			f.Add(i, s.arg, s.query, []byte(s.body))
		}
	}
	tn := startNode(f)
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	codes := map[string]bool{}
	for _, c := range wire.ErrorCodes() {
		codes[c] = true
	}
	f.Fuzz(func(t *testing.T, route int, arg, query string, body []byte) {
		if route < 0 || len(routes) == 0 {
			return
		}
		rt := routes[route%len(routes)]
		if arg == tn.id && strings.HasPrefix(rt.template, "/v1/operator/servers") {
			return // removing the only server is an answer, but ends the fuzzing
		}
		target := tn.url + fill(rt.template, arg)
		if query != "" {
			target += "?" + query
		}
		if strings.IndexFunc(target, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
			return // a malformed request line, which net/http answers itself (TestBadPercentEscapes)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, rt.method, target, bytes.NewReader(body))
		if err != nil {
			return // not a request an HTTP client can send (TestBadPercentEscapes covers those)
		}
		resp, err := hc.Do(req)
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
				return // a blocking query or a wait for a held key
			}
			t.Fatalf("%s %s (body %q): %v: the server dropped the connection (a panic?)", rt.method, target, body, err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil && ctx.Err() == nil && !notJSON(rt.template) {
			t.Fatalf("%s %s: reading the answer: %v", rt.method, target, err)
		}
		if resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("%s %s (body %q): %d %s", rt.method, target, body, resp.StatusCode, b)
		}
		if notJSON(rt.template) || resp.StatusCode < 400 || ctx.Err() != nil {
			return
		}
		var e wire.ErrorBody
		if err := json.Unmarshal(b, &e); err != nil {
			t.Fatalf("%s %s: %d answer is not the JSON error shape: %v: %q", rt.method, target, resp.StatusCode, err, b)
		}
		if !codes[e.Error] || e.Error == wire.CodeInternal || e.Message == "" {
			t.Fatalf("%s %s (body %q): %d with code %q message %q: want a documented code and a message", rt.method, target, body, resp.StatusCode, e.Error, e.Message)
		}
		if (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) && resp.Header.Get("Retry-After") == "" {
			t.Fatalf("%s %s: %d without Retry-After", rt.method, target, resp.StatusCode)
		}
	})
}
