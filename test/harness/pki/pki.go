// Package pki is a certificate authority in a test's temp dir that writes
// the certificate files of servers and clients and returns their mutual
// TLS settings. It is test-only, like package harness, and imports
// cluster/certs, so cluster/certs's own tests cannot use it.
package pki

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tenure-io/tenure/cluster"
)

// A PKI is a CA whose certificate is in Dir, with the files it writes.
type PKI struct {
	Dir string
	CA  *cluster.CertAuthority
}

// New makes a CA in a temp dir of t and writes its certificate there.
func New(t testing.TB) *PKI {
	t.Helper()
	ca, err := cluster.NewCertAuthority(cluster.CAOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := &PKI{Dir: t.TempDir(), CA: ca}
	if err := os.WriteFile(p.CAFile(), ca.CertPEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// CAFile is the name of the CA's certificate file.
func (p *PKI) CAFile() string { return filepath.Join(p.Dir, cluster.CACertFile) }

// FilesOf returns the mutual TLS settings of the pair written as name.
func (p *PKI) FilesOf(name string) cluster.TLSFiles {
	return cluster.TLSFiles{CAFile: p.CAFile(), CertFile: filepath.Join(p.Dir, name+".pem"),
		KeyFile: filepath.Join(p.Dir, name+"-key.pem"), VerifyIncoming: true}
}

// Write writes pair as name and returns the mutual TLS settings with it;
// err is the error of issuing pair, which fails t.
func (p *PKI) Write(t testing.TB, name string, pair cluster.CertPair, err error) cluster.TLSFiles {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	f := p.FilesOf(name)
	if err := cluster.WriteCertPair(f.CertFile, f.KeyFile, pair); err != nil {
		t.Fatal(err)
	}
	return f
}
