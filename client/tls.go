package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// Environment variables that DefaultConfig reads the TLS settings from.
const (
	// EnvCACert names a PEM file of the CA certificates that sign the
	// servers' certificates (TLSConfig.CAFile).
	EnvCACert = "TENURE_CACERT"
	// EnvClientCert and EnvClientKey name the PEM client certificate and
	// key that the client presents to servers that require one
	// (TLSConfig.CertFile, TLSConfig.KeyFile).
	EnvClientCert = "TENURE_CLIENT_CERT"
	EnvClientKey  = "TENURE_CLIENT_KEY"
)

// TLSConfig configures HTTPS to the servers. Setting any field makes
// addresses without a scheme mean https://.
type TLSConfig struct {
	// CAFile is a PEM file of the CA certificates that sign the servers'
	// certificates. Empty means the system's roots.
	CAFile string

	// CertFile and KeyFile are the PEM client certificate and key, for
	// servers started with -tls-verify-incoming. Both or neither.
	CertFile string
	KeyFile  string

	// ServerName is the name the servers' certificates are verified
	// against, instead of the host of each address: for example
	// "server.<cluster-name>.tenure" when the client reaches the servers
	// by addresses that are not in their certificates. The leader address
	// that servers announce is host:port, so a client that follows the
	// leader needs either that address in the leader's certificate or
	// ServerName.
	ServerName string

	// Config is a ready configuration to start from; the fields above are
	// applied to a copy of it. Nil means a new one with TLS 1.2 at least.
	Config *tls.Config
}

// enabled reports whether any TLS setting is made.
func (t TLSConfig) enabled() bool {
	return t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" || t.ServerName != "" || t.Config != nil
}

// validate checks the fields without reading the files.
func (t TLSConfig) validate() error {
	switch {
	case t.CertFile != "" && t.KeyFile == "":
		return errors.New("config: TLS.KeyFile is required with TLS.CertFile")
	case t.KeyFile != "" && t.CertFile == "":
		return errors.New("config: TLS.CertFile is required with TLS.KeyFile")
	}
	return nil
}

// Build reads the files and returns the configuration a Client with these
// settings gives its connections, for a program that also calls the API
// with an HTTP client of its own; nil when no setting is made.
func (t TLSConfig) Build() (*tls.Config, error) {
	if !t.enabled() {
		return nil, nil
	}
	if err := t.validate(); err != nil {
		return nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.Config != nil {
		cfg = t.Config.Clone()
	}
	if t.CAFile != "" {
		b, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("config: TLS.CAFile: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("config: TLS.CAFile %s: no PEM certificate in it", t.CAFile)
		}
		cfg.RootCAs = pool
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("config: TLS.CertFile, TLS.KeyFile: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if t.ServerName != "" {
		cfg.ServerName = t.ServerName
	}
	return cfg, nil
}
