package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/httpapi"
	"github.com/tenure-io/tenure/test/harness"
)

func TestServerTLSSettings(t *testing.T) {
	dir := t.TempDir()
	config := writeFile(t, filepath.Join(dir, "server.json"), `{"tls-cert-file":"file.pem","tls-key-file":"file-key.pem","tls-ca-file":"file-ca.pem","tls-verify-incoming":true}`)
	base := []string{"-data-dir", dir}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    cluster.TLSFiles
		wantErr string
	}{
		{name: "off by default", args: base},
		{
			name: "flags",
			args: append(base, "-tls-cert-file", "s.pem", "-tls-key-file", "s-key.pem", "-tls-ca-file", "ca.pem", "-tls-verify-incoming"),
			want: cluster.TLSFiles{CertFile: "s.pem", KeyFile: "s-key.pem", CAFile: "ca.pem", VerifyIncoming: true},
		},
		{
			name: "environment",
			args: base,
			env:  map[string]string{"TENURE_TLS_CERT_FILE": "e.pem", "TENURE_TLS_KEY_FILE": "e-key.pem", "TENURE_TLS_CA_FILE": "e-ca.pem", "TENURE_TLS_VERIFY_INCOMING": "true"},
			want: cluster.TLSFiles{CertFile: "e.pem", KeyFile: "e-key.pem", CAFile: "e-ca.pem", VerifyIncoming: true},
		},
		{
			name: "config file",
			args: append(base, "-config", config),
			want: cluster.TLSFiles{CertFile: "file.pem", KeyFile: "file-key.pem", CAFile: "file-ca.pem", VerifyIncoming: true},
		},
		{
			name: "flag beats environment beats file",
			args: append(base, "-config", config, "-tls-cert-file", "flag.pem"),
			env:  map[string]string{"TENURE_TLS_KEY_FILE": "env-key.pem"},
			want: cluster.TLSFiles{CertFile: "flag.pem", KeyFile: "env-key.pem", CAFile: "file-ca.pem", VerifyIncoming: true},
		},
		{name: "certificate without key", args: append(base, "-tls-cert-file", "s.pem"), wantErr: "-tls-cert-file needs -tls-key-file"},
		{name: "key without certificate", args: append(base, "-tls-key-file", "s-key.pem"), wantErr: "-tls-key-file needs -tls-cert-file"},
		{
			name:    "verify incoming without CA",
			args:    append(base, "-tls-cert-file", "s.pem", "-tls-key-file", "s-key.pem", "-tls-verify-incoming"),
			wantErr: "-tls-verify-incoming needs -tls-ca-file",
		},
		{name: "verify incoming without TLS", args: append(base, "-tls-ca-file", "ca.pem", "-tls-verify-incoming"), wantErr: "-tls-verify-incoming needs -tls-cert-file"},
		{name: "CA without TLS", args: append(base, "-tls-ca-file", "ca.pem"), wantErr: "-tls-ca-file is set but TLS is off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := loadServerSettings(tt.args, func(k string) string { return tt.env[k] })
			if harness.WantError(t, "loadServerSettings", err, tt.wantErr) {
				return
			}
			if s.cluster.TLS != tt.want {
				t.Errorf("TLS settings: got %+v, want %+v", s.cluster.TLS, tt.want)
			}
		})
	}
}

// A server whose TLS files cannot be read stops before it starts Raft.
func TestServeRefusesUnreadableTLSFiles(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.pem")
	_, _, err := httpsConfig(cluster.TLSFiles{CertFile: missing, KeyFile: missing}, "tenure")
	if err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("httpsConfig with missing files: got %v, want an error naming %s", err, missing)
	}
}

// A follower forwards only to a leader that proves the server role of the
// cluster and the leader's node id: a certificate of the CA for the right
// address is not enough, nor is another server's.
func TestForwardingVerifiesTheServerRole(t *testing.T) {
	dir := t.TempDir()
	ca, err := cluster.NewCertAuthority(cluster.CAOptions{})
	if err != nil {
		t.Fatal(err)
	}
	caFile := writeFile(t, filepath.Join(dir, "ca.pem"), string(ca.CertPEM()))
	write := func(name string, pair cluster.CertPair, err error) cluster.TLSFiles {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		f := cluster.TLSFiles{CAFile: caFile, CertFile: filepath.Join(dir, name+".pem"), KeyFile: filepath.Join(dir, name+"-key.pem")}
		if err := cluster.WriteCertPair(f.CertFile, f.KeyFile, pair); err != nil {
			t.Fatal(err)
		}
		return f
	}
	pair, err := ca.IssueServer(cluster.ServerCertOptions{NodeID: "n1"})
	follower := write("n1", pair, err)
	pair, err = ca.IssueServer(cluster.ServerCertOptions{NodeID: "n2"})
	leader := write("n2", pair, err)
	pair, err = ca.IssueServer(cluster.ServerCertOptions{NodeID: "n3"})
	other := write("n3", pair, err)
	pair, err = ca.IssueServer(cluster.ServerCertOptions{NodeID: "n2", ClusterName: "staging"})
	staging := write("staging", pair, err)

	_, forward, err := httpsConfig(follower, "tenure")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		leader cluster.TLSFiles
		ok     bool
	}{
		{"the leader, a server of the cluster", leader, true},
		{"another server of the cluster (n3 for n2)", other, false},
		{"a server of another cluster name, same CA, address and id", staging, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srvCfg, err := cluster.ServerTLSConfig(tc.leader)
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
			srv.TLS = srvCfg
			srv.StartTLS()
			defer srv.Close()
			req, err := http.NewRequestWithContext(httpapi.ForServer(context.Background(), "n2"), http.MethodGet, srv.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := forward.Do(req)
			if err == nil {
				resp.Body.Close()
			}
			if (err == nil) != tc.ok {
				t.Fatalf("forwarding to %s: err %v, want ok=%v", tc.name, err, tc.ok)
			}
		})
	}
}

// -free-key-retention defaults to 24h, takes 0 (keep for ever), and a
// negative value is refused by name.
func TestServerFreeKeyRetentionFlag(t *testing.T) {
	none := func(string) string { return "" }
	s, err := loadServerSettings([]string{"-data-dir", "d"}, none)
	if err != nil || s.cluster.FreeKeyRetention != 24*time.Hour {
		t.Fatalf("default = %v, %v; want 24h", s.cluster.FreeKeyRetention, err)
	}
	s, err = loadServerSettings([]string{"-data-dir", "d", "-free-key-retention", "0"}, none)
	if err != nil || s.cluster.FreeKeyRetention != 0 {
		t.Fatalf("-free-key-retention 0 = %v, %v; want 0", s.cluster.FreeKeyRetention, err)
	}
	env := map[string]string{"TENURE_FREE_KEY_RETENTION": "1h"}
	s, err = loadServerSettings([]string{"-data-dir", "d"}, func(k string) string { return env[k] })
	if err != nil || s.cluster.FreeKeyRetention != time.Hour {
		t.Fatalf("env = %v, %v; want 1h", s.cluster.FreeKeyRetention, err)
	}
	s, _ = loadServerSettings([]string{"-data-dir", "d", "-free-key-retention", "-1m"}, none)
	if err := s.cluster.Validate(); err == nil || !strings.Contains(err.Error(), "free-key-retention") {
		t.Errorf("-free-key-retention -1m: Validate = %v, want an error naming it", err)
	}
}

// The HTTP connection limits have flags, are checked naming the flag, and
// the answer's write timeout covers the longest blocking wait.
func TestServerHTTPLimitFlags(t *testing.T) {
	none := func(string) string { return "" }
	s, err := loadServerSettings([]string{"-data-dir", "d", "-http-max-conns", "100", "-http-max-conns-per-client", "10", "-max-wait", "20m"}, none)
	if err != nil || s.http.MaxConns != 100 || s.http.MaxConnsPerClient != 10 {
		t.Fatalf("limits = %+v, %v; want 100 and 10", s.http, err)
	}
	if s.http.WriteTimeout < 20*time.Minute {
		t.Errorf("write timeout %v is below -max-wait 20m: blocking acquires would be cut", s.http.WriteTimeout)
	}
	s, err = loadServerSettings([]string{"-data-dir", "d", "-max-wait", "5s"}, none)
	if err != nil || s.http.WriteTimeout < 10*time.Minute {
		t.Errorf("write timeout %v (%v) is below the longest blocking query's wait (10m)", s.http.WriteTimeout, err)
	}
	if _, err := loadServerSettings([]string{"-data-dir", "d", "-http-max-conns", "10", "-http-max-conns-per-client", "11"}, none); err == nil ||
		!strings.Contains(err.Error(), "http-max-conns-per-client") {
		t.Errorf("per-client above the total: %v, want an error naming -http-max-conns-per-client", err)
	}
}

// TENURE_HTTP_ADDR is the list of servers the CLI and clients talk to; a
// server started in a shell that exported it (as the README's tour does)
// must not take it for its own listen address. Its own variable is
// TENURE_SERVER_HTTP_ADDR.
func TestServerIgnoresTheClientsHTTPAddrVariable(t *testing.T) {
	env := map[string]string{"TENURE_HTTP_ADDR": "127.0.0.1:7500,127.0.0.1:7510,127.0.0.1:7520"}
	get := func(k string) string { return env[k] }
	s, err := loadServerSettings([]string{"-data-dir", "d"}, get)
	if err != nil {
		t.Fatalf("server settings with the clients' TENURE_HTTP_ADDR exported: %v", err)
	}
	if want := cluster.DefaultConfig().HTTPAddr; s.cluster.HTTPAddr != want {
		t.Errorf("listen address = %q, want the default %q: TENURE_HTTP_ADDR is the clients' variable", s.cluster.HTTPAddr, want)
	}
	env["TENURE_SERVER_HTTP_ADDR"] = "127.0.0.1:7600"
	if s, err = loadServerSettings([]string{"-data-dir", "d"}, get); err != nil || s.cluster.HTTPAddr != "127.0.0.1:7600" {
		t.Errorf("with TENURE_SERVER_HTTP_ADDR: %v, %v; want 127.0.0.1:7600", s.cluster.HTTPAddr, err)
	}
	if s, err = loadServerSettings([]string{"-data-dir", "d", "-http-addr", "127.0.0.1:7700"}, get); err != nil || s.cluster.HTTPAddr != "127.0.0.1:7700" {
		t.Errorf("with -http-addr: %v, %v; want the flag's 127.0.0.1:7700", s.cluster.HTTPAddr, err)
	}
}
