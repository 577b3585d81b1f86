package main

import (
	"errors"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/cluster"
)

func TestACLCommands(t *testing.T) {
	tok := map[string]any{"accessor_id": "acc-1", "secret_id": "sec-1", "policies": []string{"scenes"}, "holder_prefix": "tracker-",
		"created_at": "2026-01-02T03:04:05Z", "create_index": 7}
	listed := map[string]any{"accessor_id": "acc-1", "policies": []string{"scenes"}, "holder_prefix": "tracker-", "created_at": "2026-01-02T03:04:05Z"}
	pol := map[string]any{"name": "scenes", "rules": []any{map[string]any{"prefix": "scenes/", "rights": []string{"read", "write"}}}}
	tests := []requestCase{
		{"bootstrap", []string{"acl", "bootstrap"}, 200, map[string]any{"accessor_id": "acc-0", "secret_id": "sec-0", "management": true, "policies": []string{}},
			"POST", "/v1/acl/bootstrap", "", []string{"AccessorID:", "acc-0", "SecretID:", "sec-0", "Management:", "true"}},
		{"token create", []string{"acl", "token", "create", "-policy", "scenes", "-policy", "ops", "-holder-prefix", "tracker-", "-description", "trackers"}, 200, tok,
			"PUT", "/v1/acl/token", `{"description":"trackers","policies":["scenes","ops"],"holder_prefix":"tracker-"}`, []string{"sec-1", "tracker-"}},
		{"token list", []string{"acl", "token", "list"}, 200, map[string]any{"tokens": []any{listed}, "index": 3},
			"GET", "/v1/acl/tokens", "", []string{"ACCESSOR", "acc-1", "scenes", "tracker-"}},
		{"token read", []string{"acl", "token", "read", "acc-1"}, 200, listed,
			"GET", "/v1/acl/token/acc-1", "", []string{"acc-1"}},
		{"token self", []string{"acl", "token", "self"}, 200, listed,
			"GET", "/v1/acl/token/self", "", []string{"acc-1"}},
		{"token delete", []string{"acl", "token", "delete", "acc-1"}, 204, nil,
			"DELETE", "/v1/acl/token/acc-1", "", []string{"deleted token acc-1"}},
		{"policy create", []string{"acl", "policy", "create", "-name", "scenes", "-rule", "prefix=scenes/:read,write", "-rule", "prefix=:operator"}, 200, pol,
			"PUT", "/v1/acl/policy/scenes", `{"rules":[{"prefix":"scenes/","rights":["read","write"]},{"prefix":"","rights":["operator"]}]}`, []string{"policy scenes", "prefix=scenes/:read,write"}},
		{"policy list", []string{"acl", "policy", "list"}, 200, map[string]any{"policies": []any{pol}, "index": 3},
			"GET", "/v1/acl/policies", "", []string{"scenes", "prefix=scenes/:read,write"}},
		{"policy read json", []string{"acl", "policy", "read", "scenes", "-json"}, 200, pol,
			"GET", "/v1/acl/policy/scenes", "", []string{`"name": "scenes"`}},
		{"policy delete", []string{"acl", "policy", "delete", "scenes"}, 204, nil,
			"DELETE", "/v1/acl/policy/scenes", "", []string{"deleted policy scenes"}},
	}
	runRequestCases(t, tests)
}

func TestParseRule(t *testing.T) {
	tests := []struct {
		in   string
		want client.ACLRule
		ok   bool
	}{
		{"prefix=scenes/:read,write", client.ACLRule{Prefix: "scenes/", Rights: []string{"read", "write"}}, true},
		{"prefix=:operator", client.ACLRule{Prefix: "", Rights: []string{"operator"}}, true},
		{"prefix=a:b:c/:read", client.ACLRule{Prefix: "a:b:c/", Rights: []string{"read"}}, true}, // keys may hold ':'
		{"prefix=x:", client.ACLRule{}, false},
		{"scenes/:read", client.ACLRule{}, false},
		{"prefix=scenes/", client.ACLRule{}, false},
	}
	for _, tt := range tests {
		got, err := parseRule(tt.in)
		if (err == nil) != tt.ok || (tt.ok && !reflect.DeepEqual(got, tt.want)) {
			t.Errorf("parseRule(%q) = %+v, %v; want %+v ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// Every command sends the token of -token, or of TENURE_HTTP_TOKEN.
func TestTokenFlagAndEnv(t *testing.T) {
	var got []string
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get(client.HeaderToken))
		writeJSON(w, 200, map[string]any{"leases": []any{}, "index": 1})
	})
	t.Setenv(client.EnvHTTPToken, "from-env")
	t.Setenv("TENURE_TOKEN", "42") // the fencing token of tenure lock's command: not an ACL token
	if r := runCLI(t, "leases", "list", "-http-addr", srv.URL); r.code != exitOK {
		t.Fatalf("leases list: %d %s", r.code, r.stderr)
	}
	if r := runCLI(t, "leases", "list", "-http-addr", srv.URL, "-token", "from-flag"); r.code != exitOK {
		t.Fatalf("leases list -token: %d %s", r.code, r.stderr)
	}
	// On leases renew and release, -token is the fencing token; the ACL
	// token is -acl-token.
	if r := runCLI(t, "leases", "release", "k", "-holder", "h", "-token", "3", "-secret", strings.Repeat("s", 32), "-http-addr", srv.URL, "-acl-token", "from-acl-flag"); r.code != exitOK {
		t.Fatalf("leases release: %d %s", r.code, r.stderr)
	}
	if want := []string{"from-env", "from-flag", "from-acl-flag"}; !reflect.DeepEqual(got, want) {
		t.Errorf("tokens sent: %q, want %q", got, want)
	}
}

// ACL settings come from flags, the environment and the config file (on
// -dev, which needs no TLS for them: TestServerACLsNeedRaftTLS).
func TestServerACLSettings(t *testing.T) {
	none := func(string) string { return "" }
	s, err := loadServerSettings([]string{"-data-dir", "d"}, none)
	if err != nil {
		t.Fatal(err)
	}
	if s.cluster.ACLEnabled || s.cluster.ACLDefaultPolicy != cluster.ACLDeny || s.metricsOpen {
		t.Errorf("defaults: enabled %v policy %q metrics-open %v; want off, deny, false", s.cluster.ACLEnabled, s.cluster.ACLDefaultPolicy, s.metricsOpen)
	}
	s, err = loadServerSettings([]string{"-dev", "-acl-enabled", "-acl-default-policy", "allow", "-metrics-open"}, none)
	if err != nil || !s.cluster.ACLEnabled || s.cluster.ACLDefaultPolicy != cluster.ACLAllow || !s.metricsOpen {
		t.Errorf("flags: %+v %v", s, err)
	}
	env := map[string]string{"TENURE_ACL_ENABLED": "true", "TENURE_ACL_DEFAULT_POLICY": "deny"}
	s, err = loadServerSettings([]string{"-dev"}, func(k string) string { return env[k] })
	if err != nil || !s.cluster.ACLEnabled || s.cluster.ACLDefaultPolicy != cluster.ACLDeny {
		t.Errorf("env: %+v %v", s, err)
	}
	path := writeFile(t, filepath.Join(t.TempDir(), "c.json"), `{"acl-enabled": true, "acl-default-policy": "allow", "metrics-open": true}`)
	s, err = loadServerSettings([]string{"-dev", "-config", path}, none)
	if err != nil || !s.cluster.ACLEnabled || s.cluster.ACLDefaultPolicy != cluster.ACLAllow || !s.metricsOpen {
		t.Errorf("config file: %+v %v", s, err)
	}
	s, _ = loadServerSettings([]string{"-data-dir", "d", "-acl-default-policy", "maybe"}, none)
	if err := s.cluster.Validate(); err == nil {
		t.Error("acl-default-policy maybe: Validate accepted it")
	}
}

// No usage message prints the ACL secret of the environment.
func TestUsageNeverPrintsTheToken(t *testing.T) {
	t.Setenv(client.EnvHTTPToken, "s3cr3t-token-value")
	for _, args := range [][]string{{"leases", "list", "-bogus"}, {"status", "-h"}, {"leases", "renew", "-h"}} {
		got := runCLI(t, args...)
		if strings.Contains(got.stderr+got.stdout, "s3cr3t-token-value") {
			t.Errorf("tenure %v printed the token:\n%s", args, got.stderr)
		}
	}
}

// ACLs on a Raft port that authenticates nobody protect nothing (a forged
// AppendEntries writes any entry): `tenure server -acl-enabled` without
// the TLS flags is refused, saying which flags to add; with them it
// starts, and so does -dev, whose Raft has no port (an in-memory
// transport).
func TestServerACLsNeedRaftTLS(t *testing.T) {
	none := func(string) string { return "" }
	_, err := loadServerSettings([]string{"-data-dir", "d", "-acl-enabled"}, none)
	if err == nil {
		t.Fatal("-acl-enabled without TLS: accepted; want it refused, Raft would be on plain TCP")
	}
	for _, flag := range []string{"-acl-enabled", "-tls-cert-file", "-tls-key-file", "-tls-ca-file"} {
		if !strings.Contains(err.Error(), flag) {
			t.Errorf("error %q does not name %s", err, flag)
		}
	}
	env := map[string]string{"TENURE_ACL_ENABLED": "true"}
	if _, err := loadServerSettings([]string{"-data-dir", "d"}, func(k string) string { return env[k] }); err == nil {
		t.Error("TENURE_ACL_ENABLED without TLS: accepted")
	}

	dir := t.TempDir()
	ca, err := cluster.NewCertAuthority(cluster.CAOptions{})
	if err != nil {
		t.Fatal(err)
	}
	caFile, cert, key := filepath.Join(dir, "ca.pem"), filepath.Join(dir, "n1.pem"), filepath.Join(dir, "n1-key.pem")
	pair, err := ca.IssueServer(cluster.ServerCertOptions{NodeID: "n1"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, caFile, string(ca.CertPEM()))
	if err := cluster.WriteCertPair(cert, key, pair); err != nil {
		t.Fatal(err)
	}
	s, err := loadServerSettings([]string{"-data-dir", "d", "-acl-enabled", "-tls-cert-file", cert, "-tls-key-file", key, "-tls-ca-file", caFile}, none)
	if err != nil {
		t.Fatalf("-acl-enabled with TLS: %v", err)
	}
	if err := s.cluster.ValidateRaftAuth(); err != nil {
		t.Errorf("-acl-enabled with TLS: %v", err)
	}

	s, err = loadServerSettings([]string{"-dev", "-acl-enabled"}, none)
	if err != nil {
		t.Fatalf("-dev -acl-enabled: %v", err)
	}
	if _, ok := s.cluster.Transport.(*raft.InmemTransport); !ok {
		t.Errorf("-dev: Raft transport %T, want an in-memory one (no port)", s.cluster.Transport)
	}
	// Nor does gossip bring another server into its Raft.
	m := cluster.Member{Name: "n2", Status: "alive", Meta: cluster.MemberMeta{Role: "server", ID: "n2", ClusterName: s.cluster.ClusterName, RaftAddr: "127.0.0.1:7511"}}
	if err := s.cluster.ProveServer(m); !errors.Is(err, cluster.ErrNotProven) {
		t.Errorf("-dev admits a server announced over gossip: %v, want ErrNotProven", err)
	}
}
