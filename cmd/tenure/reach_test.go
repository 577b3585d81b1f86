package main

import (
	"crypto/tls"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// countedTLSServer is an httptest TLS server that counts the connections
// made to it, with clientAuth as its client certificate rule.
func countedTLSServer(t *testing.T, clientAuth tls.ClientAuthType) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"node_id": "n1"})
	}))
	s.TLS = &tls.Config{ClientAuth: clientAuth}
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	s.Config.ErrorLog = nil
	s.StartTLS()
	t.Cleanup(s.Close)
	return s, &conns
}

// A mistake in the setup fails the command at once, saying what is wrong
// and which flag or variable fixes it.
func TestSetupMistakesFailAtOnceNamingTheFlag(t *testing.T) {
	dir := t.TempDir()
	open, openConns := countedTLSServer(t, tls.NoClientCert)
	caFile := writeFile(t, filepath.Join(dir, "ca.pem"), string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: open.Certificate().Raw})))
	mutual, mutualConns := countedTLSServer(t, tls.RequireAnyClientCert)
	var plainConns atomic.Int64
	plain := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"node_id": "n1"})
	}))
	plain.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			plainConns.Add(1)
		}
	}
	plain.Start()
	t.Cleanup(plain.Close)

	for _, tt := range []struct {
		name  string
		args  []string
		conns *atomic.Int64
		want  []string // in stderr
	}{
		{"https against a plain server", []string{"-http-addr", "https://" + plain.Listener.Addr().String()}, &plainConns,
			[]string{"plain HTTP", "-http-addr or TENURE_HTTP_ADDR"}},
		{"http against a TLS server", []string{"-http-addr", "http://" + open.Listener.Addr().String()}, openConns,
			[]string{"speaks TLS", "https://", "-http-addr or TENURE_HTTP_ADDR"}},
		{"no CA", []string{"-http-addr", mutual.URL}, mutualConns,
			[]string{"not signed by a CA", "-ca-file or TENURE_CACERT"}},
		{"no client certificate", []string{"-http-addr", mutual.URL, "-ca-file", caFile}, mutualConns,
			[]string{"requires a client certificate", "-client-cert and -client-key, or TENURE_CLIENT_CERT and TENURE_CLIENT_KEY"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.conns.Load()
			got := runCLI(t, append([]string{"status"}, tt.args...)...)
			if got.code != exitError {
				t.Errorf("exit code %d, want %d", got.code, exitError)
			}
			for _, w := range tt.want {
				if !strings.Contains(got.stderr, w) {
					t.Errorf("stderr %q does not say %q", got.stderr, w)
				}
			}
			if n := tt.conns.Load() - before; n != 1 {
				t.Errorf("%d connections to the server, want 1: no retry", n)
			}
		})
	}
}
