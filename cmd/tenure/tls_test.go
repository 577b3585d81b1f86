package main

import (
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/cluster"
)

// readCert parses the certificate at path and fails t on error.
func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s: no PEM block", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return c
}

func TestTLSCreateWritesFiles(t *testing.T) {
	dir := t.TempDir()
	other := t.TempDir()
	steps := []struct {
		name      string
		args      []string
		wantFiles []string // new files in dir, certificates then keys
		check     func(t *testing.T, c *x509.Certificate)
	}{
		{
			name:      "ca create",
			args:      []string{"tls", "ca", "create", "-dir", dir, "-days", "30"},
			wantFiles: []string{"tenure-ca.pem", "tenure-ca-key.pem"},
			check: func(t *testing.T, c *x509.Certificate) {
				if !c.IsCA {
					t.Error("not a CA")
				}
			},
		},
		{
			name:      "server certificate",
			args:      []string{"tls", "cert", "create", "-server", "-node-id", "n1", "-dir", dir, "-additional-dnsname", "n1.example.com", "-additional-ipaddress", "10.0.0.1"},
			wantFiles: []string{"tenure-server-n1.pem", "tenure-server-n1-key.pem"},
			check: func(t *testing.T, c *x509.Certificate) {
				if want := []string{"server.tenure.tenure", "localhost", "n1.example.com"}; !slices.Equal(c.DNSNames, want) {
					t.Errorf("DNS SANs %v, want %v", c.DNSNames, want)
				}
				if len(c.IPAddresses) != 2 || c.IPAddresses[1].String() != "10.0.0.1" {
					t.Errorf("IP SANs %v, want 127.0.0.1 and 10.0.0.1", c.IPAddresses)
				}
				if len(c.URIs) != 1 || c.URIs[0].String() != "tenure://tenure/server/n1" {
					t.Errorf("URI SANs %v, want [tenure://tenure/server/n1] (the node id)", c.URIs)
				}
			},
		},
		{
			name:      "server certificate of a named cluster",
			args:      []string{"tls", "cert", "create", "-server", "-node-id", "n2", "-cluster-name", "prod", "-dir", dir},
			wantFiles: []string{"prod-server-n2.pem", "prod-server-n2-key.pem"},
			check: func(t *testing.T, c *x509.Certificate) {
				if !slices.Contains(c.DNSNames, "server.prod.tenure") {
					t.Errorf("DNS SANs %v lack server.prod.tenure", c.DNSNames)
				}
				if len(c.URIs) != 1 || c.URIs[0].String() != "tenure://prod/server/n2" {
					t.Errorf("URI SANs %v, want [tenure://prod/server/n2]", c.URIs)
				}
			},
		},
		{
			name:      "first client certificate",
			args:      []string{"tls", "cert", "create", "-client", "-dir", dir},
			wantFiles: []string{"tenure-client-0.pem", "tenure-client-0-key.pem"},
			check: func(t *testing.T, c *x509.Certificate) {
				if c.Subject.CommonName != "client-0" || len(c.DNSNames) != 0 {
					t.Errorf("CN %q, DNS SANs %v; want client-0 and none", c.Subject.CommonName, c.DNSNames)
				}
			},
		},
		{
			name:      "second client certificate",
			args:      []string{"tls", "cert", "create", "-client", "-dir", dir},
			wantFiles: []string{"tenure-client-1.pem", "tenure-client-1-key.pem"},
		},
		{
			name:      "named client certificate",
			args:      []string{"tls", "cert", "create", "-client", "-name", "scheduler", "-dir", dir},
			wantFiles: []string{"tenure-client-scheduler.pem", "tenure-client-scheduler-key.pem"},
			check: func(t *testing.T, c *x509.Certificate) {
				if c.Subject.CommonName != "scheduler" {
					t.Errorf("CN %q, want scheduler", c.Subject.CommonName)
				}
			},
		},
		{
			name: "CA given by -ca and -key",
			args: []string{"tls", "cert", "create", "-client", "-name", "elsewhere", "-dir", other,
				"-ca", filepath.Join(dir, "tenure-ca.pem"), "-key", filepath.Join(dir, "tenure-ca-key.pem")},
			wantFiles: []string{filepath.Join(other, "tenure-client-elsewhere.pem"), filepath.Join(other, "tenure-client-elsewhere-key.pem")},
		},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			got := runCLI(t, st.args...)
			if got.code != exitOK {
				t.Fatalf("exit %d, stderr %q", got.code, got.stderr)
			}
			paths := make([]string, len(st.wantFiles))
			for i, f := range st.wantFiles {
				paths[i] = f
				if !filepath.IsAbs(f) {
					paths[i] = filepath.Join(dir, f)
				}
				fi, err := os.Stat(paths[i])
				if err != nil {
					t.Fatalf("%s not written: %v", f, err)
				}
				wantMode := os.FileMode(0o644)
				if strings.HasSuffix(f, "-key.pem") {
					wantMode = 0o600
				}
				if fi.Mode().Perm() != wantMode {
					t.Errorf("%s: mode %v, want %v", f, fi.Mode().Perm(), wantMode)
				}
				if !strings.Contains(got.stdout, paths[i]) {
					t.Errorf("stdout %q does not name %s", got.stdout, paths[i])
				}
			}
			c := readCert(t, paths[0])
			if !c.IsCA {
				ca := readCert(t, filepath.Join(dir, "tenure-ca.pem"))
				if err := c.CheckSignatureFrom(ca); err != nil {
					t.Errorf("not signed by the CA: %v", err)
				}
			}
			if st.check != nil {
				st.check(t, c)
			}
		})
	}
}

func TestTLSCreateRefuses(t *testing.T) {
	dir := t.TempDir()
	if got := runCLI(t, "tls", "ca", "create", "-dir", dir); got.code != exitOK {
		t.Fatalf("ca create: exit %d, stderr %q", got.code, got.stderr)
	}
	if got := runCLI(t, "tls", "cert", "create", "-server", "-node-id", "n1", "-dir", dir); got.code != exitOK {
		t.Fatalf("cert create: exit %d, stderr %q", got.code, got.stderr)
	}
	empty := t.TempDir()
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"second CA in the same dir", []string{"tls", "ca", "create", "-dir", dir}, exitError, "file exists"},
		{"same server again", []string{"tls", "cert", "create", "-server", "-node-id", "n1", "-dir", dir}, exitError, "file exists"},
		{"neither -server nor -client", []string{"tls", "cert", "create", "-dir", dir}, exitUsage, "exactly one of -server and -client"},
		{"both -server and -client", []string{"tls", "cert", "create", "-server", "-client", "-node-id", "n1", "-dir", dir}, exitUsage, "exactly one"},
		{"server without node id", []string{"tls", "cert", "create", "-server", "-dir", dir}, exitUsage, "-node-id is required"},
		{"client with a SAN", []string{"tls", "cert", "create", "-client", "-additional-dnsname", "x", "-dir", dir}, exitUsage, "are for -server"},
		{"bad IP address", []string{"tls", "cert", "create", "-server", "-node-id", "n3", "-additional-ipaddress", "10.0.0", "-dir", dir}, exitUsage, "not an IP address"},
		{"bad cluster name", []string{"tls", "cert", "create", "-server", "-node-id", "n3", "-cluster-name", "Prod", "-dir", dir}, exitUsage, "cluster name"},
		{"zero days", []string{"tls", "ca", "create", "-days", "0", "-dir", empty}, exitUsage, "-days must be positive"},
		{"no CA in the dir", []string{"tls", "cert", "create", "-client", "-dir", empty}, exitError, "tenure tls ca create"},
		{"unknown subcommand", []string{"tls", "ca", "destroy"}, exitUsage, `unknown subcommand "destroy"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := runCLI(t, tt.args...)
			if got.code != tt.wantCode || !strings.Contains(got.stderr, tt.wantErr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", got.code, got.stderr, tt.wantCode, tt.wantErr)
			}
		})
	}
	entries, err := os.ReadDir(empty)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("failed commands wrote %d files to %s", len(entries), empty)
	}
}

// Every command talks to servers over mutual TLS with -ca-file,
// -client-cert and -client-key (or their environment variables), using
// https:// addresses or bare host:port.
func TestCommandsOverMutualTLS(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"tls", "ca", "create", "-dir", dir},
		{"tls", "cert", "create", "-server", "-node-id", "n1", "-dir", dir},
		{"tls", "cert", "create", "-client", "-dir", dir},
	} {
		if got := runCLI(t, args...); got.code != exitOK {
			t.Fatalf("tenure %s: exit %d, stderr %q", strings.Join(args, " "), got.code, got.stderr)
		}
	}
	caFile := filepath.Join(dir, "tenure-ca.pem")
	certFile, keyFile := filepath.Join(dir, "tenure-client-0.pem"), filepath.Join(dir, "tenure-client-0-key.pem")
	sc, err := cluster.ServerTLSConfig(cluster.TLSFiles{CAFile: caFile, CertFile: filepath.Join(dir, "tenure-server-n1.pem"), KeyFile: filepath.Join(dir, "tenure-server-n1-key.pem"), VerifyIncoming: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"node_id": "n1", "role": "leader", "ready": true, "leader_id": "n1"})
	}))
	srv.TLS = sc
	srv.StartTLS()
	t.Cleanup(srv.Close)
	hostPort := strings.TrimPrefix(srv.URL, "https://")

	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		wantCode int
		wantErr  string
	}{
		{name: "flags and an https address", args: []string{"-http-addr", srv.URL, "-ca-file", caFile, "-client-cert", certFile, "-client-key", keyFile}, wantCode: exitOK},
		{name: "flags and host:port", args: []string{"-http-addr", hostPort, "-ca-file", caFile, "-client-cert", certFile, "-client-key", keyFile}, wantCode: exitOK},
		{
			name:     "environment",
			args:     []string{"-http-addr", srv.URL},
			env:      map[string]string{"TENURE_CACERT": caFile, "TENURE_CLIENT_CERT": certFile, "TENURE_CLIENT_KEY": keyFile},
			wantCode: exitOK,
		},
		{name: "no client certificate", args: []string{"-http-addr", srv.URL, "-ca-file", caFile}, wantCode: exitError, wantErr: "error: "},
		{name: "no CA", args: []string{"-http-addr", srv.URL, "-client-cert", certFile, "-client-key", keyFile}, wantCode: exitError, wantErr: "certificate"},
		{name: "certificate without key", args: []string{"-http-addr", srv.URL, "-ca-file", caFile, "-client-cert", certFile}, wantCode: exitError, wantErr: "TLS.KeyFile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"TENURE_CACERT", "TENURE_CLIENT_CERT", "TENURE_CLIENT_KEY"} {
				t.Setenv(k, tt.env[k])
			}
			got := runCLI(t, append([]string{"status", "-json"}, tt.args...)...)
			if got.code != tt.wantCode || !strings.Contains(got.stderr, tt.wantErr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", got.code, got.stderr, tt.wantCode, tt.wantErr)
			}
			if tt.wantCode == exitOK && !strings.Contains(got.stdout, `"node_id": "n1"`) {
				t.Errorf("stdout %q, want the status of n1", got.stdout)
			}
		})
	}
}
