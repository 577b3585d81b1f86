package harness

import (
	"io"
	"net/http"
	"strings"
)

// Reply is an HTTP answer as a test saw it: status, headers and the whole
// body.
type Reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// Send makes one request with hc: body, when not empty, is sent as JSON;
// header adds headers. It reads the whole answer and is safe to call from
// any goroutine. The error is the transport's: any status is a Reply.
func Send(hc *http.Client, method, url, body string, header http.Header) (Reply, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return Reply{}, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return Reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return Reply{}, err
	}
	return Reply{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
}

// WithLeaseSecret adds secret to the body (or, for a release in the query
// form, the query) of an acquire, renewal or release to url (a path, or a
// whole URL) that names none, as a Go client sends its own: a test's raw
// calls act as one client. Other requests are returned as they are.
func WithLeaseSecret(secret, method, url, body string) (string, string) {
	path, query, _ := strings.Cut(url, "?")
	lease := method == http.MethodPut && strings.Contains(path, "/v1/leases/") ||
		method == http.MethodPost && strings.Contains(path, "/v1/renew") ||
		method == http.MethodDelete && strings.Contains(path, "/v1/leases/")
	if !lease {
		return url, body
	}
	if method == http.MethodDelete && strings.Contains(query, "holder=") && !strings.Contains(query, "secret=") {
		return url + "&secret=" + secret, body
	}
	b := strings.TrimSpace(body)
	if !strings.HasPrefix(b, "{") || strings.Contains(b, `"secret"`) {
		return url, body
	}
	if strings.TrimSpace(b[1:]) == "}" {
		return url, `{"secret":"` + secret + `"}`
	}
	return url, `{"secret":"` + secret + `",` + b[1:]
}
