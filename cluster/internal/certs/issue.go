package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Defaults of the certificates that tenure makes.
const (
	// DefaultClusterName is the cluster name when none is given.
	DefaultClusterName = "tenure"
	// DefaultCAValidity is how long a new CA is valid: five years.
	DefaultCAValidity = 5 * 365 * 24 * time.Hour
	// DefaultCertValidity is how long a server or client certificate is
	// valid: one year.
	DefaultCertValidity = 365 * 24 * time.Hour
)

// backdate is how far before "now" a certificate starts to be valid, so
// that a peer whose clock is a little behind accepts it at once.
const backdate = time.Minute

// PEM block types.
const (
	pemCertificate = "CERTIFICATE"
	pemPrivateKey  = "PRIVATE KEY" // PKCS #8
)

// Errors of this package.
var (
	// ErrNotServer: a certificate does not carry the server role of the
	// cluster (no DNS SAN server.<cluster-name>.tenure, or a key usage
	// missing), or was not issued by the cluster's CA.
	ErrNotServer = errors.New("not a server certificate of this cluster")
	// ErrNoServerID: a server certificate names no node id (no URI SAN
	// tenure://<cluster-name>/server/<node-id>), or more than one: it
	// cannot stand for a server (a certificate never stands for two).
	ErrNoServerID = errors.New("server certificate names no single node id")
	// ErrWrongServerID: a server certificate names another node id than
	// the one announced or configured for the peer.
	ErrWrongServerID = errors.New("server certificate names another node id")
	// ErrExists: a file to be written exists already; nothing was written.
	ErrExists = errors.New("file exists")
)

// clusterNameRE is one DNS label: the cluster name is part of a DNS SAN.
var clusterNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// nameRE is what a node id or client name may be: it becomes part of a file
// name.
var nameRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// ServerName returns the DNS name that marks a server of the cluster:
// "server.<clusterName>.tenure".
func ServerName(clusterName string) string {
	return "server." + clusterName + ".tenure"
}

// ServerURIScheme is the scheme of the URI SAN that names a server's node
// id: tenure://<cluster-name>/server/<node-id> (ServerURI).
const ServerURIScheme = "tenure"

// ServerURI returns the URI SAN that names server nodeID of clusterName:
// "tenure://<clusterName>/server/<nodeID>". Node ids are [A-Za-z0-9._-],
// so the URI needs no escaping.
func ServerURI(clusterName, nodeID string) *url.URL {
	return &url.URL{Scheme: ServerURIScheme, Host: clusterName, Path: "/server/" + nodeID}
}

// ServerID returns the node id that cert names for clusterName: the one
// URI SAN tenure://<clusterName>/server/<node-id>. A certificate with no
// such URI, with two (of any cluster), or with a node id that is not 1 to
// 128 of [A-Za-z0-9._-] names none: the error wraps ErrNoServerID. It does
// not verify the chain (VerifyServer does).
func ServerID(cert *x509.Certificate, clusterName string) (string, error) {
	var ids []string
	for _, u := range cert.URIs {
		if u.Scheme != ServerURIScheme {
			continue
		}
		id, ok := strings.CutPrefix(u.Path, "/server/")
		if !ok || u.Host != clusterName || !nameRE.MatchString(id) || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return "", fmt.Errorf("%w: URI %s is not %s", ErrNoServerID, u, "tenure://"+clusterName+"/server/<node-id>")
		}
		ids = append(ids, id)
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("%w: no URI SAN %s (reissue it: tenure tls cert create -server -node-id ID)", ErrNoServerID, "tenure://"+clusterName+"/server/<node-id>")
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("%w: it names %d: %s", ErrNoServerID, len(ids), strings.Join(ids, ", "))
}

// Authority is a certificate authority that signs the certificates of one
// cluster: its certificate and its private key.
type Authority struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// CAOptions are the settings of a new CA.
type CAOptions struct {
	// ClusterName names the cluster in the CA's subject. Empty means
	// DefaultClusterName.
	ClusterName string
	// Validity is how long the CA is valid from now. 0 means
	// DefaultCAValidity.
	Validity time.Duration
}

// NewAuthority makes a new CA with a fresh ECDSA P-256 key.
func NewAuthority(opts CAOptions) (*Authority, error) {
	name, err := clusterName(opts.ClusterName)
	if err != nil {
		return nil, err
	}
	validity, err := validity(opts.Validity, DefaultCAValidity)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generate CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		// A random suffix tells two CAs of one cluster name apart.
		Subject: pkix.Name{
			CommonName:   fmt.Sprintf("tenure CA %s %s", name, hex.EncodeToString(serial.Bytes()[:4])),
			Organization: []string{"tenure"},
		},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(validity),
		IsCA:                  true,
		BasicConstraintsValid: true,
		MaxPathLenZero:        true, // signs leaves only
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parse new CA certificate: %w", err)
	}
	return &Authority{cert: cert, key: key}, nil
}

// ParseAuthority reads a CA from its PEM certificate and PEM private key
// (PKCS #8, SEC 1 "EC PRIVATE KEY" or PKCS #1 "RSA PRIVATE KEY", so that a
// CA made with openssl can sign too).
func ParseAuthority(certPEM, keyPEM []byte) (*Authority, error) {
	cert, err := ParseCertificate(certPEM)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("CA certificate %q is not a CA (basic constraints)", cert.Subject.CommonName)
	}
	key, err := parsePrivateKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, errors.New("CA key does not belong to the CA certificate")
	}
	return &Authority{cert: cert, key: key}, nil
}

// Certificate returns the CA's certificate.
func (a *Authority) Certificate() *x509.Certificate { return a.cert }

// CertPEM returns the CA's certificate in PEM.
func (a *Authority) CertPEM() []byte { return encodeCert(a.cert.Raw) }

// KeyPEM returns the CA's private key in PEM (PKCS #8).
func (a *Authority) KeyPEM() ([]byte, error) { return encodeKey(a.key) }

// Pair is a certificate and its private key, both in PEM.
type Pair struct {
	CertPEM []byte
	KeyPEM  []byte
}

// ServerOptions are the settings of a server certificate.
type ServerOptions struct {
	// ClusterName makes the server SAN server.<ClusterName>.tenure. Empty
	// means DefaultClusterName.
	ClusterName string
	// NodeID is the server's node id; it goes into the URI SAN
	// ServerURI(ClusterName, NodeID) (and the subject). Required.
	NodeID string
	// DNSNames and IPAddresses are SANs on top of the server name,
	// "localhost" and 127.0.0.1: the names and addresses clients and the
	// other servers use to reach this server's HTTP API.
	DNSNames    []string
	IPAddresses []net.IP
	// Validity is how long the certificate is valid from now. 0 means
	// DefaultCertValidity; never past the CA's own end.
	Validity time.Duration
}

// IssueServer makes a server certificate: usable for server and client
// authentication (servers dial each other), with the DNS SANs
// ServerName(ClusterName) and "localhost", the IP SAN 127.0.0.1, the
// additional names and addresses, and the URI SAN ServerURI(ClusterName,
// NodeID): its identity, which peers check (ServerID).
func (a *Authority) IssueServer(opts ServerOptions) (Pair, error) {
	name, err := clusterName(opts.ClusterName)
	if err != nil {
		return Pair{}, err
	}
	if !nameRE.MatchString(opts.NodeID) {
		return Pair{}, fmt.Errorf("node id %q: want 1 to 128 of [A-Za-z0-9._-]", opts.NodeID)
	}
	dns := []string{ServerName(name), "localhost"}
	for _, d := range opts.DNSNames {
		if d == "" {
			return Pair{}, errors.New("additional DNS name: empty")
		}
		if !slices.Contains(dns, d) {
			dns = append(dns, d)
		}
	}
	ips := []net.IP{net.IPv4(127, 0, 0, 1)}
	for _, ip := range opts.IPAddresses {
		if ip == nil {
			return Pair{}, errors.New("additional IP address: empty")
		}
		if !slices.ContainsFunc(ips, ip.Equal) {
			ips = append(ips, ip)
		}
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: ServerName(name), OrganizationalUnit: []string{opts.NodeID}, Organization: []string{"tenure"}},
		DNSNames:    dns,
		IPAddresses: ips,
		URIs:        []*url.URL{ServerURI(name, opts.NodeID)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	return a.issue(tmpl, opts.Validity)
}

// ClientOptions are the settings of a client certificate.
type ClientOptions struct {
	// Name is the client's name, the certificate's common name. Required.
	Name string
	// ClusterName goes into the subject. Empty means DefaultClusterName.
	ClusterName string
	// Validity is how long the certificate is valid from now. 0 means
	// DefaultCertValidity; never past the CA's own end.
	Validity time.Duration
}

// IssueClient makes a client certificate: client authentication only, no
// SAN, so it can never pass for a server.
func (a *Authority) IssueClient(opts ClientOptions) (Pair, error) {
	name, err := clusterName(opts.ClusterName)
	if err != nil {
		return Pair{}, err
	}
	if !nameRE.MatchString(opts.Name) {
		return Pair{}, fmt.Errorf("client name %q: want 1 to 128 of [A-Za-z0-9._-]", opts.Name)
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: opts.Name, OrganizationalUnit: []string{"client." + name + ".tenure"}, Organization: []string{"tenure"}},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	return a.issue(tmpl, opts.Validity)
}

// issue completes tmpl with a serial number and validity, signs it with a
// fresh P-256 key and returns both in PEM.
func (a *Authority) issue(tmpl *x509.Certificate, d time.Duration) (Pair, error) {
	d, err := validity(d, DefaultCertValidity)
	if err != nil {
		return Pair{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Pair{}, fmt.Errorf("generate key: %w", err)
	}
	if tmpl.SerialNumber, err = newSerial(); err != nil {
		return Pair{}, err
	}
	now := time.Now()
	tmpl.NotBefore = now.Add(-backdate)
	tmpl.NotAfter = now.Add(d)
	if tmpl.NotAfter.After(a.cert.NotAfter) {
		tmpl.NotAfter = a.cert.NotAfter
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, key.Public(), a.key)
	if err != nil {
		return Pair{}, fmt.Errorf("sign certificate: %w", err)
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return Pair{}, err
	}
	return Pair{CertPEM: encodeCert(der), KeyPEM: keyPEM}, nil
}

// ParseCertificate returns the first certificate of a PEM block list.
func ParseCertificate(certPEM []byte) (*x509.Certificate, error) {
	for rest := certPEM; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, errors.New("no PEM CERTIFICATE block")
		}
		if b.Type == pemCertificate {
			return x509.ParseCertificate(b.Bytes)
		}
	}
}

func clusterName(s string) (string, error) {
	if s == "" {
		return DefaultClusterName, nil
	}
	if !clusterNameRE.MatchString(s) {
		return "", fmt.Errorf("cluster name %q: want one DNS label: 1 to 63 of [a-z0-9-], not starting or ending with '-'", s)
	}
	return s, nil
}

func validity(d, def time.Duration) (time.Duration, error) {
	switch {
	case d == 0:
		return def, nil
	case d < 0:
		return 0, fmt.Errorf("validity must be positive, got %v", d)
	}
	return d, nil
}

// newSerial returns a random positive 128-bit serial number.
func newSerial() (*big.Int, error) {
	limit := new(big.Int).Lsh(big.NewInt(1), 128)
	n, err := rand.Int(rand.Reader, limit)
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	return n.Add(n, big.NewInt(1)), nil
}

func encodeCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: pemCertificate, Bytes: der})
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: pemPrivateKey, Bytes: der}), nil
}

func parsePrivateKey(keyPEM []byte) (crypto.Signer, error) {
	for rest := keyPEM; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			return nil, errors.New("no PEM private key block")
		}
		var (
			k   any
			err error
		)
		switch b.Type {
		case "PRIVATE KEY":
			k, err = x509.ParsePKCS8PrivateKey(b.Bytes)
		case "EC PRIVATE KEY":
			k, err = x509.ParseECPrivateKey(b.Bytes)
		case "RSA PRIVATE KEY":
			k, err = x509.ParsePKCS1PrivateKey(b.Bytes)
		default:
			continue // e.g. "EC PARAMETERS" before the key
		}
		if err != nil {
			return nil, err
		}
		s, ok := k.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("unsupported key type %T", k)
		}
		return s, nil
	}
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ka, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ka.Equal(b)
}

// CheckClusterName checks that s can name a cluster: one DNS label, since
// it becomes part of the server role's name (ServerName). Empty is the
// default name, DefaultClusterName.
func CheckClusterName(s string) error {
	_, err := clusterName(s)
	return err
}
