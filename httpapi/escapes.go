package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/tenure-io/tenure/client/wire"
)

// checkQuery refuses a query string that is not valid percent-escaping.
// net/url drops such a parameter without a word (r.URL.Query ignores the
// error), so "?prefix=%zz" would list every lease as if no prefix had been
// given. The answer names the parameter.
func checkQuery(raw string) error {
	if !strings.ContainsAny(raw, "%;") {
		return nil // only an escape or a semicolon can be wrong: no second parse on the hot path
	}
	if _, err := url.ParseQuery(raw); err == nil {
		return nil
	}
	for _, part := range strings.Split(raw, "&") {
		name, value, _ := strings.Cut(part, "=")
		if strings.Contains(name, ";") || strings.Contains(value, ";") {
			return badRequest(wire.CodeInvalidQuery, "query", "query: a semicolon is not a parameter separator; escape it as %3B")
		}
		uname, err := url.QueryUnescape(name)
		if err != nil {
			return badRequest(wire.CodeInvalidQuery, "query", fmt.Sprintf("query: parameter name %q is not valid percent-escaping", name))
		}
		if _, err := url.QueryUnescape(value); err != nil {
			return badRequest(wire.CodeInvalidQuery, uname, fmt.Sprintf("%s: %q is not valid percent-escaping (%%XX with two hex digits)", uname, value))
		}
	}
	return badRequest(wire.CodeInvalidQuery, "query", "query: not valid percent-escaping")
}

// A request that net/http cannot parse (a bad percent-escape in the path, a
// malformed request line or header, headers too large) never reaches the
// router: the server writes a canned plain-text answer straight to the
// connection and closes it. jsonErrorConn turns those answers into the
// API's JSON error shape, so that every answer of the API is one a client
// can decode. A canned answer is recognised by its fixed header block, which
// no handler writes (handlers' answers carry a Date header and JSON).
type jsonErrorConn struct {
	net.Conn
}

// cannedHeaders ends the status line of every answer net/http writes for a
// request it could not parse.
const cannedHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

func (c jsonErrorConn) Write(p []byte) (int, error) {
	if !bytes.HasPrefix(p, []byte("HTTP/1.1 ")) {
		return c.Conn.Write(p)
	}
	i := bytes.Index(p, []byte(cannedHeaders))
	if i < 0 || bytes.Contains(p[:i], []byte("\r\n")) {
		return c.Conn.Write(p)
	}
	if _, err := c.Conn.Write(cannedAsJSON(string(p[len("HTTP/1.1 "):i]))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// cannedAsJSON builds the JSON answer for a canned status line such as
// "400 Bad Request" or "400 Bad Request: missing required Host header".
func cannedAsJSON(status string) []byte {
	code, detail, _ := strings.Cut(status, ": ")
	var body wire.ErrorBody
	switch {
	case strings.HasPrefix(code, "431"):
		body = wire.ErrorBody{Error: wire.CodeInvalidQuery, Field: "headers", Message: "headers: the request's headers are too large"}
	case strings.HasPrefix(code, "501"):
		body = wire.ErrorBody{Error: wire.CodeInvalidQuery, Field: "headers", Message: "headers: unsupported transfer encoding"}
	default:
		msg := "the request could not be parsed: a bad percent-escape in the path (%XX needs two hex digits; escape % itself as %25), or a malformed request line or header"
		if detail != "" {
			msg = "the request could not be parsed: " + detail
		}
		body = wire.ErrorBody{Error: wire.CodeInvalidQuery, Field: "path", Message: msg}
	}
	b, _ := json.Marshal(body)
	b = append(b, '\n')
	head := fmt.Sprintf("HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n", code, len(b))
	return append([]byte(head), b...)
}

// Listener returns ln for a plain-HTTP server of the API: its connections
// answer requests net/http cannot parse in the JSON error shape. Over TLS
// the server must see the *tls.Conn itself (for HTTP/2, which forwarding
// uses), so there net/http's own plain-text answer stays.
func Listener(ln net.Listener) net.Listener { return jsonErrorListener{ln} }

type jsonErrorListener struct{ net.Listener }

func (l jsonErrorListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return jsonErrorConn{Conn: c}, nil
}
