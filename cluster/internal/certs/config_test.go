package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeFiles writes the CA's certificate and the pair into dir and returns
// their paths.
func writeFiles(t *testing.T, dir, name string, ca *Authority, p Pair) Files {
	t.Helper()
	f := Files{
		CAFile:   filepath.Join(dir, name+"-ca.pem"),
		CertFile: filepath.Join(dir, name+".pem"),
		KeyFile:  filepath.Join(dir, name+"-key.pem"),
	}
	if err := os.WriteFile(f.CAFile, ca.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WritePair(f.CertFile, f.KeyFile, p); err != nil {
		t.Fatal(err)
	}
	return f
}

func issueServer(t *testing.T, ca *Authority, cluster, node string) Pair {
	t.Helper()
	p, err := ca.IssueServer(ServerOptions{ClusterName: cluster, NodeID: node})
	if err != nil {
		t.Fatalf("IssueServer: %v", err)
	}
	return p
}

func issueClient(t *testing.T, ca *Authority, name string) Pair {
	t.Helper()
	p, err := ca.IssueClient(ClientOptions{Name: name})
	if err != nil {
		t.Fatalf("IssueClient: %v", err)
	}
	return p
}

// chainOf parses the certificate of a PEM file or pair.
func chainOf(t *testing.T, certPEM []byte) []*x509.Certificate {
	t.Helper()
	c, err := ParseCertificate(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	return []*x509.Certificate{c}
}

func poolOf(ca *x509.Certificate) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(ca)
	return p
}

func TestVerifyServer(t *testing.T) {
	ca, otherCA := newCA(t, "prod"), newCA(t, "prod")
	roots := poolOf(ca.Certificate())
	tests := []struct {
		name    string
		certPEM []byte
		cluster string
		wantOK  bool
	}{
		{name: "server of the cluster", certPEM: issueServer(t, ca, "prod", "n1").CertPEM, cluster: "prod", wantOK: true},
		{name: "client certificate", certPEM: issueClient(t, ca, "worker").CertPEM, cluster: "prod"},
		{name: "server of another cluster name", certPEM: issueServer(t, ca, "staging", "n1").CertPEM, cluster: "prod"},
		{name: "server of the cluster name from another CA", certPEM: issueServer(t, otherCA, "prod", "n1").CertPEM, cluster: "prod"},
		{name: "the CA itself", certPEM: ca.CertPEM(), cluster: "prod"},
		{name: "no cluster name", certPEM: issueServer(t, ca, "prod", "n1").CertPEM, cluster: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := VerifyServer(chainOf(t, tt.certPEM), roots, tt.cluster)
			if tt.wantOK {
				if err != nil {
					t.Fatalf("VerifyServer: %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrNotServer) {
				t.Fatalf("VerifyServer: got %v, want ErrNotServer", err)
			}
		})
	}
	if err := VerifyServer(nil, roots, "prod"); !errors.Is(err, ErrNotServer) {
		t.Errorf("VerifyServer(no certificate): got %v, want ErrNotServer", err)
	}
}

// TestVerifyServerID: a server certificate stands for the one node id it
// names, and for no other.
func TestVerifyServerID(t *testing.T) {
	ca := newCA(t, "prod")
	roots := poolOf(ca.Certificate())
	n1 := chainOf(t, issueServer(t, ca, "prod", "n1").CertPEM)
	if err := VerifyServerID(n1, roots, "prod", "n1"); err != nil {
		t.Fatalf("VerifyServerID(n1's certificate, n1): %v", err)
	}
	for _, id := range []string{"n3", "n", "n1 ", ""} {
		err := VerifyServerID(n1, roots, "prod", id)
		if !errors.Is(err, ErrWrongServerID) || !errors.Is(err, ErrNotServer) {
			t.Errorf("VerifyServerID(n1's certificate, %q): got %v, want ErrWrongServerID and ErrNotServer", id, err)
		}
	}
}

func TestFilesValidate(t *testing.T) {
	tests := []struct {
		name    string
		files   Files
		wantErr string
	}{
		{name: "off", files: Files{}},
		{name: "server TLS", files: Files{CertFile: "c", KeyFile: "k"}},
		{name: "mutual TLS", files: Files{CAFile: "ca", CertFile: "c", KeyFile: "k", VerifyIncoming: true}},
		{name: "certificate without key", files: Files{CertFile: "c"}, wantErr: "KeyFile"},
		{name: "key without certificate", files: Files{KeyFile: "k"}, wantErr: "CertFile"},
		{name: "verify incoming without CA", files: Files{CertFile: "c", KeyFile: "k", VerifyIncoming: true}, wantErr: "CAFile"},
		{name: "verify incoming without TLS", files: Files{CAFile: "ca", VerifyIncoming: true}, wantErr: "CertFile"},
		{name: "CA without TLS", files: Files{CAFile: "ca"}, wantErr: "CertFile"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.files.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate: %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("Validate: got %v, want an error naming %s", err, tt.wantErr)
			}
		})
	}
}

// handshake runs a TLS handshake between server and client configurations
// over an in-memory connection, and returns the first error of either side.
func handshake(t *testing.T, server, client *tls.Config) error {
	t.Helper()
	sc, cc := net.Pipe()
	t.Cleanup(func() { sc.Close(); cc.Close() })
	deadline := time.Now().Add(10 * time.Second)
	sc.SetDeadline(deadline)
	cc.SetDeadline(deadline)
	srv, cli := tls.Server(sc, server), tls.Client(cc, client)
	errc := make(chan error, 1)
	go func() {
		err := srv.Handshake()
		if err == nil {
			// TLS 1.3: the client learns that its certificate was refused
			// only when it reads; give it something to read.
			_, err = srv.Write([]byte{1})
		}
		if err != nil {
			sc.Close()
		}
		errc <- err
	}()
	err := cli.Handshake()
	if err == nil {
		_, err = cli.Read(make([]byte, 1))
	}
	if err != nil {
		cc.Close()
	}
	return errors.Join(<-errc, err)
}

func TestServerAndClientConfigs(t *testing.T) {
	dir := t.TempDir()
	ca, otherCA := newCA(t, ""), newCA(t, "")
	server := writeFiles(t, dir, "server", ca, issueServer(t, ca, "", "n1"))
	peer := writeFiles(t, dir, "peer", ca, issueServer(t, ca, "", "n2"))
	cli := writeFiles(t, dir, "client", ca, issueClient(t, ca, "app"))
	stranger := writeFiles(t, dir, "stranger", otherCA, issueClient(t, otherCA, "app"))
	anon := Files{CAFile: server.CAFile}
	mutual := server
	mutual.VerifyIncoming = true

	tests := []struct {
		name    string
		server  Files
		client  Files
		tweak   func(*tls.Config)
		wantErr bool
	}{
		{name: "server TLS, client without certificate", server: server, client: anon},
		{name: "mutual TLS, client certificate of the CA", server: mutual, client: cli},
		{name: "mutual TLS, another server as the client (forwarding)", server: mutual, client: peer},
		{name: "mutual TLS, no client certificate", server: mutual, client: anon, wantErr: true},
		{name: "mutual TLS, client certificate of another CA", server: mutual, client: Files{CAFile: server.CAFile, CertFile: stranger.CertFile, KeyFile: stranger.KeyFile}, wantErr: true},
		{name: "client trusting another CA", server: server, client: Files{CAFile: stranger.CAFile}, wantErr: true},
		{name: "TLS 1.1 client", server: server, client: anon, tweak: func(c *tls.Config) { c.MinVersion, c.MaxVersion = tls.VersionTLS10, tls.VersionTLS11 }, wantErr: true},
		{name: "TLS 1.2 client", server: server, client: anon, tweak: func(c *tls.Config) { c.MaxVersion = tls.VersionTLS12 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := ServerConfig(tt.server)
			if err != nil {
				t.Fatalf("ServerConfig: %v", err)
			}
			cc, err := ClientConfig(tt.client)
			if err != nil {
				t.Fatalf("ClientConfig: %v", err)
			}
			cc.ServerName = "localhost"
			if tt.tweak != nil {
				tt.tweak(cc)
			}
			err = handshake(t, sc, cc)
			if tt.wantErr && err == nil {
				t.Fatal("handshake succeeded, want it refused")
			}
			if !tt.wantErr && err != nil {
				t.Fatalf("handshake: %v", err)
			}
		})
	}
}

func TestVerifyServerConnectionInAHandshake(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, "prod")
	server := writeFiles(t, dir, "server", ca, issueServer(t, ca, "prod", "n1"))
	staging := writeFiles(t, dir, "staging", ca, issueServer(t, ca, "staging", "n1"))
	roots := poolOf(ca.Certificate())
	tests := []struct {
		name    string
		peer    Files
		wantErr bool
	}{
		{name: "server of the cluster", peer: server},
		{name: "server of another cluster", peer: staging, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := ServerConfig(tt.peer)
			if err != nil {
				t.Fatal(err)
			}
			cc, err := ClientConfig(Files{CAFile: server.CAFile})
			if err != nil {
				t.Fatal(err)
			}
			cc.ServerName = "localhost"
			cc.VerifyConnection = VerifyServerConnection(roots, "prod")
			err = handshake(t, sc, cc)
			if tt.wantErr != (err != nil) {
				t.Fatalf("handshake: got %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func TestConfigsReportMissingFiles(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	if _, err := ServerConfig(Files{CertFile: missing, KeyFile: missing}); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("ServerConfig with missing files: got %v, want an error naming %s", err, missing)
	}
	if _, err := ClientConfig(Files{CAFile: missing}); err == nil || !strings.Contains(err.Error(), "CA file") {
		t.Errorf("ClientConfig with a missing CA file: got %v, want an error about the CA file", err)
	}
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPool(notPEM); err == nil {
		t.Error("LoadPool of a file without PEM: got nil error")
	}
}

func TestWritePair(t *testing.T) {
	dir := t.TempDir()
	ca := newCA(t, "")
	p := issueClient(t, ca, "app")
	certPath, keyPath := filepath.Join(dir, "c.pem"), filepath.Join(dir, "c-key.pem")
	if err := WritePair(certPath, keyPath, p); err != nil {
		t.Fatalf("WritePair: %v", err)
	}
	for path, want := range map[string]os.FileMode{certPath: 0o644, keyPath: 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode().Perm(); got != want {
			t.Errorf("%s: mode %v, want %v", filepath.Base(path), got, want)
		}
	}
	tests := []struct {
		name           string
		cert, key      string
		wantUnwritten  string
		wantNoNewFiles bool
	}{
		{name: "both exist", cert: certPath, key: keyPath},
		{name: "key exists", cert: filepath.Join(dir, "new.pem"), key: keyPath, wantUnwritten: filepath.Join(dir, "new.pem")},
		{name: "certificate exists", cert: certPath, key: filepath.Join(dir, "new-key.pem"), wantUnwritten: filepath.Join(dir, "new-key.pem")},
	}
	other := issueClient(t, ca, "other")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := WritePair(tt.cert, tt.key, other); !errors.Is(err, ErrExists) {
				t.Fatalf("WritePair over existing files: got %v, want ErrExists", err)
			}
			if tt.wantUnwritten != "" {
				if _, err := os.Stat(tt.wantUnwritten); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("%s was written (stat: %v)", tt.wantUnwritten, err)
				}
			}
			if b, _ := os.ReadFile(certPath); string(b) != string(p.CertPEM) {
				t.Error("the existing certificate was changed")
			}
		})
	}
}

// runOpenSSL runs openssl in dir. Without openssl on PATH the test is
// skipped, unless CI=true: CI must run it.
func runOpenSSL(t *testing.T, dir string, args ...string) {
	t.Helper()
	bin, err := exec.LookPath("openssl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("openssl is not on PATH (CI=true: install it): %v", err)
		}
		t.Skipf("openssl is not on PATH: %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestOpenSSLCertificatesByTheSameRule makes a CA and server and client
// certificates with openssl, as docs/security.md tells people with their own CA
// to do, and checks that tenure treats them as its own.
func TestOpenSSLCertificatesByTheSameRule(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ca.cnf", "[req]\ndistinguished_name = dn\nprompt = no\n[dn]\nCN = openssl test CA\n"+
		"[v3_ca]\nbasicConstraints = critical,CA:TRUE\nkeyUsage = critical,keyCertSign,cRLSign\nsubjectKeyIdentifier = hash\n")
	write("server.ext", "subjectAltName = DNS:server.prod.tenure,DNS:localhost,IP:127.0.0.1,URI:tenure://prod/server/n1\n"+
		"extendedKeyUsage = serverAuth,clientAuth\nkeyUsage = critical,digitalSignature\n")
	write("noid.ext", "subjectAltName = DNS:server.prod.tenure,DNS:localhost,IP:127.0.0.1\n"+
		"extendedKeyUsage = serverAuth,clientAuth\nkeyUsage = critical,digitalSignature\n")
	write("twoids.ext", "subjectAltName = DNS:server.prod.tenure,URI:tenure://prod/server/n1,URI:tenure://prod/server/n2\n"+
		"extendedKeyUsage = serverAuth,clientAuth\nkeyUsage = critical,digitalSignature\n")
	write("serveronly.ext", "subjectAltName = DNS:server.prod.tenure,DNS:localhost,IP:127.0.0.1,URI:tenure://prod/server/n1\n"+
		"extendedKeyUsage = serverAuth\nkeyUsage = critical,digitalSignature\n")
	write("client.ext", "extendedKeyUsage = clientAuth\nkeyUsage = critical,digitalSignature\n")

	runOpenSSL(t, dir, "ecparam", "-name", "prime256v1", "-genkey", "-out", "ca-key.pem")
	runOpenSSL(t, dir, "req", "-x509", "-new", "-key", "ca-key.pem", "-config", "ca.cnf", "-extensions", "v3_ca", "-days", "30", "-out", "ca.pem")
	for _, leaf := range []string{"server", "noid", "twoids", "serveronly", "client"} {
		runOpenSSL(t, dir, "ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", leaf+"-key.pem")
		runOpenSSL(t, dir, "req", "-new", "-key", leaf+"-key.pem", "-subj", "/CN="+leaf, "-out", leaf+".csr")
		runOpenSSL(t, dir, "x509", "-req", "-in", leaf+".csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem", "-CAcreateserial",
			"-days", "30", "-extfile", leaf+".ext", "-out", leaf+".pem")
	}
	path := func(name string) string { return filepath.Join(dir, name) }
	read := func(name string) []byte {
		t.Helper()
		b, err := os.ReadFile(path(name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	roots, err := LoadPool(path("ca.pem"))
	if err != nil {
		t.Fatalf("LoadPool(openssl CA): %v", err)
	}

	t.Run("server role", func(t *testing.T) {
		tests := []struct {
			name   string
			cert   string
			wantOK bool
		}{
			{name: "server certificate", cert: "server.pem", wantOK: true},
			{name: "server certificate without a node id", cert: "noid.pem"},
			{name: "server certificate with two node ids", cert: "twoids.pem"},
			{name: "server certificate without clientAuth", cert: "serveronly.pem"},
			{name: "client certificate", cert: "client.pem"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				err := VerifyServer(chainOf(t, read(tt.cert)), roots, "prod")
				if tt.wantOK != (err == nil) {
					t.Fatalf("VerifyServer: got %v, want ok=%v", err, tt.wantOK)
				}
				if !tt.wantOK {
					return
				}
				if err := VerifyServerID(chainOf(t, read(tt.cert)), roots, "prod", "n1"); err != nil {
					t.Fatalf("VerifyServerID(n1): %v", err)
				}
				if err := VerifyServerID(chainOf(t, read(tt.cert)), roots, "prod", "n2"); !errors.Is(err, ErrWrongServerID) {
					t.Fatalf("VerifyServerID(n2): got %v, want ErrWrongServerID", err)
				}
			})
		}
	})
	t.Run("mutual TLS handshake", func(t *testing.T) {
		sc, err := ServerConfig(Files{CAFile: path("ca.pem"), CertFile: path("server.pem"), KeyFile: path("server-key.pem"), VerifyIncoming: true})
		if err != nil {
			t.Fatalf("ServerConfig: %v", err)
		}
		cc, err := ClientConfig(Files{CAFile: path("ca.pem"), CertFile: path("client.pem"), KeyFile: path("client-key.pem")})
		if err != nil {
			t.Fatalf("ClientConfig: %v", err)
		}
		cc.ServerName = "server.prod.tenure"
		if err := handshake(t, sc, cc); err != nil {
			t.Fatalf("handshake: %v", err)
		}
	})
	t.Run("openssl CA signs with tenure", func(t *testing.T) {
		ca, err := LoadAuthority(path("ca.pem"), path("ca-key.pem"))
		if err != nil {
			t.Fatalf("LoadAuthority(openssl CA with EC PARAMETERS and EC PRIVATE KEY): %v", err)
		}
		p := issueServer(t, ca, "prod", "n1")
		if err := VerifyServer(chainOf(t, p.CertPEM), roots, "prod"); err != nil {
			t.Fatalf("VerifyServer: %v", err)
		}
	})
}
