package client

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestDefaultConfigTLSFromEnvironment(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want TLSConfig
	}{
		{name: "unset", want: TLSConfig{}},
		{
			name: "all three",
			env:  map[string]string{EnvCACert: "/etc/tenure/ca.pem", EnvClientCert: "/etc/tenure/c.pem", EnvClientKey: "/etc/tenure/c-key.pem"},
			want: TLSConfig{CAFile: "/etc/tenure/ca.pem", CertFile: "/etc/tenure/c.pem", KeyFile: "/etc/tenure/c-key.pem"},
		},
		{name: "CA only", env: map[string]string{EnvCACert: "ca.pem"}, want: TLSConfig{CAFile: "ca.pem"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{EnvCACert, EnvClientCert, EnvClientKey} {
				t.Setenv(k, tt.env[k])
			}
			if got := DefaultConfig().TLS; got != tt.want {
				t.Errorf("TLS = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestAddressSchemes(t *testing.T) {
	tests := []struct {
		name  string
		addrs []string
		tls   TLSConfig
		want  []string
	}{
		{name: "plain host:port", addrs: []string{"a:1"}, want: []string{"http://a:1"}},
		{name: "https address", addrs: []string{"https://a:1", "b:2"}, want: []string{"https://a:1", "http://b:2"}},
		{name: "host:port with TLS set", addrs: []string{"a:1", "b:2"}, tls: TLSConfig{ServerName: "server.tenure.tenure"}, want: []string{"https://a:1", "https://b:2"}},
		{name: "explicit http with TLS set", addrs: []string{"http://a:1"}, tls: TLSConfig{ServerName: "server.tenure.tenure"}, want: []string{"http://a:1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.Addresses, cfg.TLS = tt.addrs, tt.tls
			c, err := New(cfg)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if got := c.cfg.Addresses; strings.Join(got, " ") != strings.Join(tt.want, " ") {
				t.Errorf("addresses %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTLSConfigRefused(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		change  func(c *Config)
		wantErr string
	}{
		{"certificate without key", func(c *Config) { c.TLS.CertFile = "c.pem" }, "TLS.KeyFile"},
		{"key without certificate", func(c *Config) { c.TLS.KeyFile = "k.pem" }, "TLS.CertFile"},
		{"TLS with an HTTP client", func(c *Config) { c.TLS.CAFile = "ca.pem"; c.HTTPClient = &http.Client{} }, "HTTPClient"},
		{"missing CA file", func(c *Config) { c.TLS.CAFile = filepath.Join(dir, "missing.pem") }, "TLS.CAFile"},
		{"CA file without PEM", func(c *Config) { c.TLS.CAFile = notPEM }, "no PEM certificate"},
		{"missing client certificate", func(c *Config) { c.TLS.CertFile, c.TLS.KeyFile = notPEM, notPEM }, "TLS.CertFile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tt.change(cfg)
			if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("New: got %v, want an error naming %q", err, tt.wantErr)
			}
		})
	}
}

// writePEM writes blocks of type typ to a new file in dir and returns its
// path.
func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// selfSignedClient writes a self-signed client certificate with common
// name cn and its key, and returns their paths and the certificate.
func selfSignedClient(t *testing.T, dir, cn string) (certFile, keyFile string, cert *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Minute),
		NotAfter:     time.Now().Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	if cert, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return writePEM(t, dir, cn+".pem", "CERTIFICATE", der), writePEM(t, dir, cn+"-key.pem", "PRIVATE KEY", keyDER), cert
}

// tlsServer is an httptest TLS server that requires a client certificate
// signed by clientCA, answers /v1/status, names leader in
// X-Tenure-Leader-Addr when it is set, and counts its requests.
type tlsServer struct {
	*httptest.Server
	hits   atomic.Int64
	leader atomic.Pointer[string]
}

func newTLSServer(t *testing.T, clientCA *x509.Certificate) *tlsServer {
	t.Helper()
	s := &tlsServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "no client certificate", http.StatusForbidden)
			return
		}
		if l := s.leader.Load(); l != nil {
			w.Header().Set(HeaderLeaderAddr, *l)
		}
		writeJSON(w, http.StatusOK, map[string]any{"node_id": r.TLS.PeerCertificates[0].Subject.CommonName, "role": "follower"})
	}))
	pool := x509.NewCertPool()
	pool.AddCert(clientCA)
	s.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// A client with the CA and a client certificate reaches a server that
// requires one, and follows a leader named host:port over https.
func TestClientOverMutualTLSFollowsLeaderWithHTTPS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, clientCert := selfSignedClient(t, dir, "app")
	first, leader := newTLSServer(t, clientCert), newTLSServer(t, clientCert)
	// httptest's servers share one certificate, for 127.0.0.1 among others.
	caFile := writePEM(t, dir, "ca.pem", "CERTIFICATE", first.Certificate().Raw)
	leaderAddr := strings.TrimPrefix(leader.URL, "https://")
	first.leader.Store(&leaderAddr)

	cfg := DefaultConfig()
	cfg.Addresses = []string{first.URL}
	cfg.TLS = TLSConfig{CAFile: caFile, CertFile: certFile, KeyFile: keyFile}
	cfg.RetryMax = 0
	c, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx := context.Background()
	st, meta, err := c.Status(ctx)
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	if st.NodeID != "app" || meta.Address != first.URL {
		t.Fatalf("got node %q from %s, want the client certificate's CN from %s", st.NodeID, meta.Address, first.URL)
	}
	if _, meta, err = c.Status(ctx); err != nil {
		t.Fatalf("second Status: %v", err)
	}
	if meta.Address != leader.URL || leader.hits.Load() != 1 {
		t.Fatalf("second call answered by %s (leader hits %d), want the leader at %s", meta.Address, leader.hits.Load(), leader.URL)
	}

	t.Run("no client certificate", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Addresses = []string{first.URL}
		cfg.TLS = TLSConfig{CAFile: caFile}
		cfg.RetryMax = 0
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Status(ctx); err == nil {
			t.Fatal("Status without a client certificate: got nil error")
		}
	})
	t.Run("without the CA", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Addresses = []string{first.URL}
		cfg.TLS = TLSConfig{CertFile: certFile, KeyFile: keyFile}
		cfg.RetryMax = 0
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Status(ctx); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("Status without trusting the server's CA: got %v, want a certificate error", err)
		}
	})
	t.Run("ready tls.Config", func(t *testing.T) {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AddCert(first.Certificate())
		cfg := DefaultConfig()
		cfg.Addresses = []string{strings.TrimPrefix(leader.URL, "https://")} // no scheme: https, since TLS is set
		cfg.TLS = TLSConfig{Config: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
		cfg.RetryMax = 0
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, meta, err := c.Status(ctx); err != nil || meta.Address != leader.URL {
			t.Fatalf("Status: %v from %v, want an answer from %s", err, meta, leader.URL)
		}
	})
}
