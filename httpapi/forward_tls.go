package httpapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// serverIDKey carries, in a forwarded request's context, the node id of
// the server it is sent to: a TLS forward client (NewForwardClient)
// accepts only a certificate that names it.
type serverIDKey struct{}

// ForServer marks ctx as that of a request to server id: a client made by
// NewForwardClient sends it only to a certificate that names id.
func ForServer(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, serverIDKey{}, id)
}

// errNoServerID: a request through a TLS forward client that does not say
// which server it is for; its certificate could not be checked.
var errNoServerID = errors.New("forwarded request names no server id to verify the certificate against")

// NewForwardClient returns the client that forwards requests over TLS:
// base is the TLS configuration (this server's certificate, the CA, no
// verification of its own), and verifyID(id) the check of the certificate
// of server id (certs.VerifyServerIDConnection). Each server id gets
// connections of its own, verified as that id when made, so that a
// connection made to one server is never reused for a request meant for
// another at the same address.
func NewForwardClient(base *tls.Config, verifyID func(id string) func(tls.ConnectionState) error) *http.Client {
	return &http.Client{Transport: &forwardTransport{base: base, verifyID: verifyID, byID: map[string]*http.Transport{}}}
}

type forwardTransport struct {
	base     *tls.Config
	verifyID func(id string) func(tls.ConnectionState) error

	mu   sync.Mutex
	byID map[string]*http.Transport
}

// maxForwardTransports bounds the transports kept: one per server id.
const maxForwardTransports = 64

func (f *forwardTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	id, _ := r.Context().Value(serverIDKey{}).(string)
	if id == "" {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, fmt.Errorf("%w: %s %s", errNoServerID, r.Method, r.URL.Host)
	}
	return f.transport(id).RoundTrip(r)
}

func (f *forwardTransport) transport(id string) *http.Transport {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.byID[id]; t != nil {
		return t
	}
	if len(f.byID) >= maxForwardTransports {
		for k, t := range f.byID {
			t.CloseIdleConnections()
			delete(f.byID, k)
		}
	}
	cfg := f.base.Clone()
	cfg.InsecureSkipVerify = true // VerifyConnection checks chain, role, usages and id
	cfg.VerifyConnection = f.verifyID(id)
	t := &http.Transport{
		TLSClientConfig:     cfg,
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 64,
		IdleConnTimeout:     90 * time.Second,
	}
	f.byID[id] = t
	return t
}

// CloseIdleConnections closes the idle connections of every server's
// transport (http.Client.CloseIdleConnections calls it).
func (f *forwardTransport) CloseIdleConnections() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.byID {
		t.CloseIdleConnections()
	}
}
