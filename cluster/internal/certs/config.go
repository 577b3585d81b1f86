package certs

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Files names the PEM files of a server's TLS settings.
type Files struct {
	// CAFile holds the certificates of the CA (or CAs) that sign the
	// cluster's certificates. Empty means the system's roots for outgoing
	// connections, and no client verification.
	CAFile string
	// CertFile and KeyFile are this server's certificate (possibly followed
	// by intermediates) and key. TLS is on when they are set; both or
	// neither.
	CertFile, KeyFile string
	// VerifyIncoming requires every client to present a certificate signed
	// by a CA of CAFile (mutual TLS). It needs CAFile.
	VerifyIncoming bool
}

// Enabled reports whether TLS is on: a certificate or key file is set.
func (f Files) Enabled() bool { return f.CertFile != "" || f.KeyFile != "" }

// Validate checks the relations between the fields of a server's settings;
// the error names the field at fault.
func (f Files) Validate() error {
	if err := f.validatePair(); err != nil {
		return err
	}
	switch {
	case f.VerifyIncoming && f.CAFile == "":
		return errors.New("VerifyIncoming needs CAFile: client certificates are verified against it")
	case f.VerifyIncoming && !f.Enabled():
		return errors.New("VerifyIncoming needs CertFile and KeyFile: TLS is off without them")
	case f.CAFile != "" && !f.Enabled():
		return errors.New("CAFile is set but CertFile and KeyFile are not: TLS is off without them")
	}
	return nil
}

// validatePair checks that the certificate and key come together.
func (f Files) validatePair() error {
	switch {
	case f.CertFile != "" && f.KeyFile == "":
		return errors.New("KeyFile is required with CertFile")
	case f.KeyFile != "" && f.CertFile == "":
		return errors.New("CertFile is required with KeyFile")
	}
	return nil
}

// ServerConfig returns the configuration of a TLS listener: this server's
// certificate, TLS 1.2 at least (Go prefers 1.3 when both sides have it),
// and, with VerifyIncoming, client certificates required and verified
// against CAFile.
func ServerConfig(f Files) (*tls.Config, error) {
	if err := f.Validate(); err != nil {
		return nil, err
	}
	if !f.Enabled() {
		return nil, errors.New("CertFile and KeyFile are required")
	}
	cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("load certificate %s and key %s: %w", f.CertFile, f.KeyFile, err)
	}
	cfg := &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.NoClientCert,
	}
	if f.VerifyIncoming {
		pool, err := LoadPool(f.CAFile)
		if err != nil {
			return nil, err
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// ClientConfig returns the configuration of this server's own outgoing TLS
// connections (forwarding to the leader): servers verified against CAFile
// (the system's roots when it is empty), this server's certificate
// presented as the client certificate when CertFile is set, TLS 1.2 at
// least. VerifyIncoming plays no part.
func ClientConfig(f Files) (*tls.Config, error) {
	if err := f.validatePair(); err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.CAFile != "" {
		pool, err := LoadPool(f.CAFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = pool
	}
	if f.Enabled() {
		cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("load certificate %s and key %s: %w", f.CertFile, f.KeyFile, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// LoadPool reads the PEM certificates of path into a new pool.
func LoadPool(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("CA file %s: no PEM certificate in it", path)
	}
	return pool, nil
}

// VerifyServer checks that chain (the peer's certificate first, then any
// intermediates) was issued by a CA of roots, is valid now, carries the
// server role of clusterName (ServerName(clusterName) among its DNS SANs),
// may be used both to serve and to dial (server and client
// authentication), and names exactly one node id (ServerID). A server
// accepts a Raft peer or a forwarded request as a server only when this
// returns nil. The error wraps ErrNotServer, and also ErrNoServerID when
// the certificate is a server's that names no single id.
func VerifyServer(chain []*x509.Certificate, roots *x509.CertPool, clusterName string) error {
	_, err := verifyServer(chain, roots, clusterName)
	return err
}

// VerifyServerID is VerifyServer, and checks that the node id the
// certificate names is id: the peer dialled for server id, or announcing
// it, is that server. A certificate of another id fails with an error
// wrapping ErrNotServer and ErrWrongServerID.
func VerifyServerID(chain []*x509.Certificate, roots *x509.CertPool, clusterName, id string) error {
	got, err := verifyServer(chain, roots, clusterName)
	if err != nil {
		return err
	}
	if got != id {
		return fmt.Errorf("%w: %w: certificate names node id %q, want %q", ErrNotServer, ErrWrongServerID, got, id)
	}
	return nil
}

// verifyServer is VerifyServer; it returns the node id the certificate names.
func verifyServer(chain []*x509.Certificate, roots *x509.CertPool, clusterName string) (string, error) {
	if len(chain) == 0 {
		return "", fmt.Errorf("%w: no certificate", ErrNotServer)
	}
	if roots == nil {
		return "", fmt.Errorf("%w: no CA to verify against", ErrNotServer)
	}
	name, err := clusterNameOf(clusterName)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrNotServer, err)
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		_, err := chain[0].Verify(x509.VerifyOptions{
			Roots:         roots,
			Intermediates: inter,
			DNSName:       ServerName(name),
			KeyUsages:     []x509.ExtKeyUsage{usage},
		})
		if err != nil {
			return "", fmt.Errorf("%w: certificate %q: %w", ErrNotServer, chain[0].Subject.CommonName, err)
		}
	}
	id, err := ServerID(chain[0], name)
	if err != nil {
		return "", fmt.Errorf("%w: certificate %q: %w", ErrNotServer, chain[0].Subject.CommonName, err)
	}
	return id, nil
}

// VerifyServerConnection returns a tls.Config.VerifyConnection function
// that refuses every peer whose verified chain is not a server of
// clusterName by VerifyServer.
func VerifyServerConnection(roots *x509.CertPool, clusterName string) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		return VerifyServer(cs.PeerCertificates, roots, clusterName)
	}
}

// VerifyServerIDConnection is VerifyServerConnection for a peer that must
// be server id (VerifyServerID).
func VerifyServerIDConnection(roots *x509.CertPool, clusterName, id string) func(tls.ConnectionState) error {
	return func(cs tls.ConnectionState) error {
		return VerifyServerID(cs.PeerCertificates, roots, clusterName, id)
	}
}

// OwnServerID returns the node id that the server certificate of f names
// for clusterName (without verifying its chain): a server checks at start
// that it is its own -node-id.
func OwnServerID(f Files, clusterName string) (string, error) {
	b, err := os.ReadFile(f.CertFile)
	if err != nil {
		return "", err
	}
	cert, err := ParseCertificate(b)
	if err != nil {
		return "", fmt.Errorf("%s: %w", f.CertFile, err)
	}
	name, err := clusterNameOf(clusterName)
	if err != nil {
		return "", err
	}
	return ServerID(cert, name)
}

// clusterNameOf is clusterName for a name that must be given.
func clusterNameOf(s string) (string, error) {
	if s == "" {
		return "", errors.New("cluster name: empty")
	}
	return clusterName(s)
}
