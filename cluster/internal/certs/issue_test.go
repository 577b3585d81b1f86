package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/x509"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/tenure-io/tenure/test/harness"
)

// newCA makes a CA for cluster and fails t on error.
func newCA(t *testing.T, cluster string) *Authority {
	t.Helper()
	ca, err := NewAuthority(CAOptions{ClusterName: cluster})
	if err != nil {
		t.Fatalf("NewAuthority(%q): %v", cluster, err)
	}
	return ca
}

// mustParse parses the certificate of p and fails t on error.
func mustParse(t *testing.T, p Pair) *x509.Certificate {
	t.Helper()
	c, err := ParseCertificate(p.CertPEM)
	if err != nil {
		t.Fatalf("parse certificate: %v", err)
	}
	return c
}

func TestNewAuthority(t *testing.T) {
	tests := []struct {
		name     string
		opts     CAOptions
		wantErr  string
		validity time.Duration
	}{
		{name: "defaults", opts: CAOptions{}, validity: DefaultCAValidity},
		{name: "cluster name and days", opts: CAOptions{ClusterName: "prod-eu", Validity: 48 * time.Hour}, validity: 48 * time.Hour},
		{name: "cluster name with a dot", opts: CAOptions{ClusterName: "a.b"}, wantErr: "cluster name"},
		{name: "upper-case cluster name", opts: CAOptions{ClusterName: "Prod"}, wantErr: "cluster name"},
		{name: "negative validity", opts: CAOptions{Validity: -time.Hour}, wantErr: "validity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ca, err := NewAuthority(tt.opts)
			if harness.WantError(t, "NewAuthority", err, tt.wantErr) {
				return
			}
			c := ca.Certificate()
			if !c.IsCA || !c.BasicConstraintsValid || !c.MaxPathLenZero {
				t.Errorf("IsCA=%v BasicConstraintsValid=%v MaxPathLenZero=%v, want all true", c.IsCA, c.BasicConstraintsValid, c.MaxPathLenZero)
			}
			if c.KeyUsage&x509.KeyUsageCertSign == 0 {
				t.Errorf("KeyUsage %b lacks CertSign", c.KeyUsage)
			}
			if k, ok := c.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
				t.Errorf("public key %T, want ECDSA P-256", c.PublicKey)
			}
			if got := c.NotAfter.Sub(c.NotBefore) - backdate; got < tt.validity-time.Minute || got > tt.validity+time.Minute {
				t.Errorf("valid for %v, want %v", got, tt.validity)
			}
			keyPEM, err := ca.KeyPEM()
			if err != nil {
				t.Fatal(err)
			}
			again, err := ParseAuthority(ca.CertPEM(), keyPEM)
			if err != nil {
				t.Fatalf("ParseAuthority of its own PEM: %v", err)
			}
			if !again.Certificate().Equal(c) {
				t.Error("ParseAuthority returned another certificate")
			}
		})
	}
}

func TestParseAuthorityRefusesAKeyOfAnotherCA(t *testing.T) {
	a, b := newCA(t, ""), newCA(t, "")
	keyB, err := b.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseAuthority(a.CertPEM(), keyB); err == nil {
		t.Fatal("ParseAuthority(CA a, key of CA b): got nil error")
	}
	leaf, err := a.IssueClient(ClientOptions{Name: "c"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseAuthority(leaf.CertPEM, leaf.KeyPEM); err == nil {
		t.Fatal("ParseAuthority(a client certificate): got nil error, want not a CA")
	}
}

func TestIssueServer(t *testing.T) {
	ca := newCA(t, "prod")
	tests := []struct {
		name     string
		opts     ServerOptions
		wantDNS  []string
		wantIPs  []string
		wantErr  string
		validity time.Duration
	}{
		{
			name:     "defaults",
			opts:     ServerOptions{ClusterName: "prod", NodeID: "n1"},
			wantDNS:  []string{"server.prod.tenure", "localhost"},
			wantIPs:  []string{"127.0.0.1"},
			validity: DefaultCertValidity,
		},
		{
			name: "additional names and addresses, duplicates once",
			opts: ServerOptions{ClusterName: "prod", NodeID: "n2",
				DNSNames:    []string{"n2.example.com", "localhost"},
				IPAddresses: []net.IP{net.ParseIP("10.0.0.2"), net.ParseIP("127.0.0.1"), net.ParseIP("::1")},
				Validity:    24 * time.Hour},
			wantDNS:  []string{"server.prod.tenure", "localhost", "n2.example.com"},
			wantIPs:  []string{"127.0.0.1", "10.0.0.2", "::1"},
			validity: 24 * time.Hour,
		},
		{
			name:     "no longer than the CA",
			opts:     ServerOptions{ClusterName: "prod", NodeID: "n3", Validity: 10 * DefaultCAValidity},
			wantDNS:  []string{"server.prod.tenure", "localhost"},
			wantIPs:  []string{"127.0.0.1"},
			validity: DefaultCAValidity,
		},
		{name: "no node id", opts: ServerOptions{ClusterName: "prod"}, wantErr: "node id"},
		{name: "node id with a slash", opts: ServerOptions{NodeID: "../n1"}, wantErr: "node id"},
		{name: "bad cluster name", opts: ServerOptions{ClusterName: "prod_1", NodeID: "n1"}, wantErr: "cluster name"},
		{name: "empty additional name", opts: ServerOptions{NodeID: "n1", DNSNames: []string{""}}, wantErr: "DNS name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ca.IssueServer(tt.opts)
			if harness.WantError(t, "IssueServer", err, tt.wantErr) {
				return
			}
			c := mustParse(t, p)
			if !slices.Equal(c.DNSNames, tt.wantDNS) {
				t.Errorf("DNS SANs: got %v, want %v", c.DNSNames, tt.wantDNS)
			}
			var ips []string
			for _, ip := range c.IPAddresses {
				ips = append(ips, ip.String())
			}
			if !slices.Equal(ips, tt.wantIPs) {
				t.Errorf("IP SANs: got %v, want %v", ips, tt.wantIPs)
			}
			wantEKU := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
			if !slices.Equal(c.ExtKeyUsage, wantEKU) {
				t.Errorf("ExtKeyUsage: got %v, want %v (servers also dial)", c.ExtKeyUsage, wantEKU)
			}
			if c.KeyUsage != x509.KeyUsageDigitalSignature {
				t.Errorf("KeyUsage: got %b, want DigitalSignature", c.KeyUsage)
			}
			wantURI := "tenure://prod/server/" + tt.opts.NodeID
			if len(c.URIs) != 1 || c.URIs[0].String() != wantURI {
				t.Errorf("URI SANs: got %v, want [%s] (the node id)", c.URIs, wantURI)
			}
			if id, err := ServerID(c, "prod"); err != nil || id != tt.opts.NodeID {
				t.Errorf("ServerID: got %q, %v, want %q", id, err, tt.opts.NodeID)
			}
			if c.IsCA {
				t.Error("a server certificate is a CA")
			}
			if c.NotAfter.After(ca.Certificate().NotAfter) {
				t.Errorf("valid until %v, after its CA (%v)", c.NotAfter, ca.Certificate().NotAfter)
			}
			if got := c.NotAfter.Sub(c.NotBefore) - backdate; got < tt.validity-2*time.Minute || got > tt.validity+time.Minute {
				t.Errorf("valid for %v, want %v", got, tt.validity)
			}
			pool := x509.NewCertPool()
			pool.AddCert(ca.Certificate())
			if _, err := c.Verify(x509.VerifyOptions{Roots: pool, DNSName: "server.prod.tenure"}); err != nil {
				t.Errorf("not signed by its CA: %v", err)
			}
		})
	}
}

func TestIssueClient(t *testing.T) {
	ca := newCA(t, "")
	tests := []struct {
		name    string
		opts    ClientOptions
		wantCN  string
		wantErr string
	}{
		{name: "named", opts: ClientOptions{Name: "scheduler"}, wantCN: "scheduler"},
		{name: "no name", opts: ClientOptions{}, wantErr: "client name"},
		{name: "name with a space", opts: ClientOptions{Name: "a b"}, wantErr: "client name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := ca.IssueClient(tt.opts)
			if harness.WantError(t, "IssueClient", err, tt.wantErr) {
				return
			}
			c := mustParse(t, p)
			if c.Subject.CommonName != tt.wantCN {
				t.Errorf("CN: got %q, want %q", c.Subject.CommonName, tt.wantCN)
			}
			if len(c.DNSNames) != 0 || len(c.IPAddresses) != 0 {
				t.Errorf("SANs: got %v %v, want none", c.DNSNames, c.IPAddresses)
			}
			if want := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}; !slices.Equal(c.ExtKeyUsage, want) {
				t.Errorf("ExtKeyUsage: got %v, want %v", c.ExtKeyUsage, want)
			}
			pool := x509.NewCertPool()
			pool.AddCert(ca.Certificate())
			if _, err := c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
				t.Errorf("not signed by its CA: %v", err)
			}
			if _, err := c.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err == nil {
				t.Error("a client certificate verifies for server authentication")
			}
		})
	}
}
