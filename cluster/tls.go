package cluster

import (
	"crypto/tls"
	"crypto/x509"

	"github.com/tenure-io/tenure/cluster/internal/certs"
)

// The TLS settings and certificates of a cluster (cluster/internal/certs),
// named here for the CLI (tenure tls, the server's flags) and the HTTP
// API.

// TLSFiles names the PEM files of a server's TLS settings (certs.Files).
type TLSFiles = certs.Files

// ServerTLSConfig returns the configuration of a TLS listener of f.
func ServerTLSConfig(f TLSFiles) (*tls.Config, error) { return certs.ServerConfig(f) }

// ClientTLSConfig returns the configuration of a server's outgoing TLS
// connections of f.
func ClientTLSConfig(f TLSFiles) (*tls.Config, error) { return certs.ClientConfig(f) }

// VerifyServerConnection checks that a connection's peer has a server
// certificate of the cluster clusterName, signed by roots.
func VerifyServerConnection(roots *x509.CertPool, clusterName string) func(tls.ConnectionState) error {
	return certs.VerifyServerConnection(roots, clusterName)
}

// VerifyServerIDConnection is VerifyServerConnection that also checks the
// certificate names node id (ErrWrongServerID otherwise).
func VerifyServerIDConnection(roots *x509.CertPool, clusterName, id string) func(tls.ConnectionState) error {
	return certs.VerifyServerIDConnection(roots, clusterName, id)
}

// ErrWrongServerID: a server certificate names another node id.
var ErrWrongServerID = certs.ErrWrongServerID

// ServerCertFiles are the file names of the certificate and key of server
// nodeID of clusterName.
func ServerCertFiles(clusterName, nodeID string) (cert, key string) {
	return certs.ServerFiles(clusterName, nodeID)
}

// ClientCertFiles are the file names of the certificate and key of client
// name of clusterName.
func ClientCertFiles(clusterName, name string) (cert, key string) {
	return certs.ClientFiles(clusterName, name)
}

// The files of a CA in its directory.
const (
	CACertFile = certs.CACertFile
	CAKeyFile  = certs.CAKeyFile
)

// CertAuthority is a CA that issues a cluster's certificates
// (certs.Authority).
type CertAuthority = certs.Authority

// CAOptions are the settings of a new CertAuthority.
type CAOptions = certs.CAOptions

// NewCertAuthority makes a CA.
func NewCertAuthority(opts CAOptions) (*CertAuthority, error) { return certs.NewAuthority(opts) }

// LoadCertAuthority reads a CA's certificate and key.
func LoadCertAuthority(certPath, keyPath string) (*CertAuthority, error) {
	return certs.LoadAuthority(certPath, keyPath)
}

// The defaults of the certificates that tenure tls makes.
const (
	DefaultClusterName  = certs.DefaultClusterName
	DefaultCAValidity   = certs.DefaultCAValidity
	DefaultCertValidity = certs.DefaultCertValidity
)

// CertPair is an issued certificate and its key, in PEM.
type CertPair = certs.Pair

// WriteCertPair writes p, refusing to replace a file.
func WriteCertPair(certPath, keyPath string, p CertPair) error {
	return certs.WritePair(certPath, keyPath, p)
}

// ServerCertOptions are the settings of a server's certificate.
type ServerCertOptions = certs.ServerOptions

// ClientCertOptions are the settings of a client's certificate.
type ClientCertOptions = certs.ClientOptions
