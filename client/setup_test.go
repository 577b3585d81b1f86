package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// closingListener accepts connections and closes them without a word, as
// a port that is not HTTP does (Raft's, gossip's).
func closingListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 1)
			_, _ = conn.Read(buf)
			conn.Close()
		}
	}()
	return ln.Addr().String()
}

// closingTLS is a TLS server (httptest's certificate) that closes every
// connection after the handshake without an answer, as a server that
// refuses the client's missing certificate once the client's side of a
// TLS 1.3 handshake has ended may; it returns its https URL.
func closingTLS(t *testing.T) string {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// A mistake in the client's setup that no retry can cure fails the call
// at once, as a *SetupError that names the server, what is wrong and the
// setting that fixes it, and still wraps what the attempt failed with.
func TestSetupMistakesFailAtOnceNamingTheSetting(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, clientCert := selfSignedClient(t, dir, "app")
	mutual := newTLSServer(t, clientCert)
	caFile := writePEM(t, dir, "ca.pem", "CERTIFICATE", mutual.Certificate().Raw)
	plain := answeringServer(t, 200, map[string]any{"node_id": "n1"})
	tlsPlainAnswer := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(tlsPlainAnswer.Close)
	otherHTTP := httptest.NewServer(http.NotFoundHandler()) // "404 page not found", text/plain
	t.Cleanup(otherHTTP.Close)
	closing := closingListener(t)

	for _, tt := range []struct {
		name     string
		addr     string
		tls      TLSConfig
		problem  string // in SetupError.Problem
		settings []string
		wraps    func(error) bool
		waits    int // backoff waits before the call gives up
		// orReset: the server may instead reset the connection after the
		// client's side of the TLS 1.3 handshake ended (a race): then
		// the client knows it after a second close.
		orReset bool
	}{
		{name: "https against a plain server", addr: "https://" + plain.hostPort(),
			problem: "plain HTTP", settings: []string{"Addresses"},
			wraps: func(err error) bool { return errors.Is(err, http.ErrSchemeMismatch) }},
		{name: "an address without a scheme means https once TLS is set", addr: plain.hostPort(), tls: TLSConfig{CAFile: caFile},
			problem: "plain HTTP", settings: []string{"Addresses", "TLS.CAFile"},
			wraps: func(err error) bool { return errors.Is(err, http.ErrSchemeMismatch) }},
		{name: "http against a TLS server", addr: "http://" + strings.TrimPrefix(tlsPlainAnswer.URL, "https://"),
			problem: "speaks TLS", settings: []string{"Addresses"},
			wraps: func(err error) bool {
				var ae *APIError
				return errors.As(err, &ae) && ae.StatusCode == 400 && errors.Is(err, ErrInvalid)
			}},
		{name: "a certificate that does not name the host", addr: "https://localhost:" + strings.Split(mutual.Listener.Addr().String(), ":")[1],
			tls:     TLSConfig{CAFile: caFile, CertFile: certFile, KeyFile: keyFile},
			problem: "not valid for this host", settings: []string{"Addresses", "TLS.ServerName"},
			wraps: func(err error) bool { var he x509.HostnameError; return errors.As(err, &he) }},
		{name: "no CA for the server's certificate", addr: mutual.URL, tls: TLSConfig{CertFile: certFile, KeyFile: keyFile},
			problem: "certificate", settings: []string{"TLS.CAFile"},
			wraps: func(err error) bool { var ce *tls.CertificateVerificationError; return errors.As(err, &ce) }},
		{name: "no client certificate", addr: mutual.URL, tls: TLSConfig{CAFile: caFile},
			problem: "client certificate", settings: []string{"TLS.CertFile"}, orReset: true,
			wraps: func(err error) bool { var oe *net.OpError; return errors.As(err, &oe) }},
		{name: "a TLS server that closes after the handshake", addr: closingTLS(t), tls: TLSConfig{CAFile: caFile},
			problem: "it requires a client certificate (or this is not tenure's HTTP API)", settings: []string{"TLS.CertFile", "Addresses"}, waits: 1,
			wraps: func(err error) bool { return err != nil }},
		{name: "an HTTP server that is not tenure", addr: otherHTTP.URL,
			problem: "not tenure's HTTP API", settings: []string{"Addresses"},
			wraps: func(err error) bool { var ae *APIError; return errors.As(err, &ae) && ae.StatusCode == 404 }},
		{name: "a port that closes without an answer", addr: closing,
			problem: "not tenure's HTTP API", settings: []string{"Addresses"}, waits: 1,
			wraps: func(err error) bool { return err != nil }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Addresses = []string{tt.addr}
			cfg.TLS = tt.tls
			c, rec := newRecordingClient(t, cfg)
			_, _, err := c.Status(context.Background())
			var se *SetupError
			if !errors.As(err, &se) {
				t.Fatalf("Status: %v, want a *SetupError", err)
			}
			if !strings.Contains(se.Problem, tt.problem) {
				t.Errorf("Problem = %q, want it to say %q", se.Problem, tt.problem)
			}
			waits := tt.waits
			if tt.orReset && slices.Equal(se.Settings, []string{"TLS.CertFile", "Addresses"}) {
				tt.settings, waits = se.Settings, 1
			}
			if !slices.Equal(se.Settings, tt.settings) {
				t.Errorf("Settings = %q, want %q", se.Settings, tt.settings)
			}
			if se.Address == "" || !strings.Contains(err.Error(), se.Address) {
				t.Errorf("error %q does not name the server %q", err, se.Address)
			}
			if !tt.wraps(err) {
				t.Errorf("error %v does not wrap what the attempt failed with", err)
			}
			if got := len(rec.got()); got != waits {
				t.Errorf("%d retries before giving up, want %d", got, waits)
			}
		})
	}
}

// A mistake that concerns one configured address only moves the call on
// to the next: the other servers still answer.
func TestSetupMistakeOfOneAddressMovesOn(t *testing.T) {
	good := answeringServer(t, 200, map[string]any{"node_id": "n2"})
	otherHTTP := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(otherHTTP.Close)
	c, _ := newTestClient(t, otherHTTP.URL, good.URL)
	st, meta, err := c.Status(context.Background())
	if err != nil {
		t.Fatalf("Status: %v, want the answer of the second server", err)
	}
	if st.NodeID != "n2" || meta.Address != good.URL {
		t.Errorf("answered by %s (%s), want %s", meta.Address, st.NodeID, good.URL)
	}
}

// A server that cannot be reached stays a failure to retry: it may be
// starting.
func TestUnreachableServerIsStillRetried(t *testing.T) {
	c, rec := newTestClient(t, downAddress(t))
	_, _, err := c.Status(context.Background())
	var se *SetupError
	if err == nil || errors.As(err, &se) {
		t.Fatalf("Status: %v, want a connection error", err)
	}
	if len(rec.got()) == 0 {
		t.Error("no retry of a refused connection")
	}
}

// An acquisition that would wait for ever still fails at once on a
// mistake in the setup: waiting cannot cure it either.
func TestSetupMistakeEndsAWaitingAcquire(t *testing.T) {
	plain := failingServer(t, 503, "no_leader", "no leader")
	cfg := DefaultConfig()
	cfg.Addresses = []string{"https://" + plain.hostPort()}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = c.Acquire(ctx, "jobs/nightly", WithWait(WaitForever))
	var se *SetupError
	if !errors.As(err, &se) || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Acquire: %v, want a *SetupError before the context ends", err)
	}
}
