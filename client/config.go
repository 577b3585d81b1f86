package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client/wire"
)

const (
	// EnvHTTPAddr names the environment variable that DefaultConfig reads
	// the server addresses from: a comma-separated list.
	EnvHTTPAddr = "TENURE_HTTP_ADDR"

	// DefaultHTTPAddr is the address used when EnvHTTPAddr is unset.
	DefaultHTTPAddr = "127.0.0.1:7500"

	// EnvHTTPToken names the environment variable that DefaultConfig reads
	// the ACL token (its secret) from. Not TENURE_TOKEN: that is the
	// fencing token that `tenure lock` hands to its command.
	EnvHTTPToken = "TENURE_HTTP_TOKEN"

	// EnvCACert names a PEM file of the CA certificates that sign the
	// servers' certificates (TLSConfig.CAFile).
	EnvCACert = "TENURE_CACERT"
	// EnvClientCert and EnvClientKey name the PEM client certificate and
	// key that the client presents to servers that require one
	// (TLSConfig.CertFile, TLSConfig.KeyFile).
	EnvClientCert = "TENURE_CLIENT_CERT"
	EnvClientKey  = "TENURE_CLIENT_KEY"
)

// Config configures a Client. Build one with DefaultConfig and change what
// you need; New copies it, so later changes have no effect on the Client.
type Config struct {
	// Addresses are the HTTP addresses of the servers, each "host:port",
	// "http://host:port" or "https://host:port"; "host:port" means https
	// when TLS is set, http otherwise. Any server answers any
	// request; the list is where the client starts and where it falls back
	// to when the leader it follows does not answer. At least one.
	Addresses []string

	// HTTPClient sends the requests. Nil means a client of the package's own
	// with pooled keep-alive connections and redirects disabled (the API
	// never redirects). Its Timeout must be zero: the time limit of each
	// attempt is set from Timeout and the wait of blocking calls.
	HTTPClient *http.Client

	// DisableStream sends every call as an HTTP request of its own. By
	// default the calls of one lease (acquire, release, renew, read) and
	// bulk renewals that do not wait on purpose go over one request
	// stream per server, many at once (docs/http-api.md, "The request
	// stream"); the answers are the same. The stream opens in the
	// background at the first such call, which goes as a request of its
	// own. A Client with HTTPClient set never uses the stream. A server
	// that refuses the stream gets requests of their own.
	DisableStream bool

	// TLS configures HTTPS: the CA that signs the servers' certificates,
	// the client certificate, the server name to verify. It cannot be
	// combined with HTTPClient: configure that client's transport instead.
	TLS TLSConfig

	// Timeout bounds one attempt of a call that does not block. A blocking
	// call (an acquire with a wait, a read with a wait index) gets its wait
	// on top of Timeout. The caller's context bounds the call as a whole.
	Timeout time.Duration

	// RetryMax is how many times a call is retried after a retryable
	// failure (a connection error, 429, 502, 503, 504); 0 disables retries.
	// A failover (a server that cannot be reached or whose connection
	// broke, 502 or 503; not an attempt that timed out) is retried beyond
	// RetryMax for as long as the waits between attempts add up to at
	// most Timeout, so that a call spans an election; the caller's
	// context bounds the retries in any case. A mistake in the setup
	// that no retry can cure (a *SetupError) is not retried.
	RetryMax int

	// RetryBaseDelay and RetryMaxDelay shape the exponential backoff with
	// full jitter: before retry n (from 1) the client waits a random delay
	// in [0, min(RetryMaxDelay, RetryBaseDelay·2^(n−1))], or the server's
	// Retry-After if that is longer. The default base, 25ms, retries a
	// graceful leader hand-over within tens of milliseconds.
	RetryBaseDelay time.Duration
	RetryMaxDelay  time.Duration

	// TrustLeaderHints makes the client follow the leader address that
	// answers name (X-Tenure-Leader-Addr) even when it is not one of
	// Addresses and not verified by TLS against TLS.CAFile. Leave it false
	// unless every answer the client can get comes from a server of the
	// cluster: the client sends its token to the address it follows.
	TrustLeaderHints bool

	// Logger receives debug lines about retries and leader changes, and
	// the lease events of kept-alive leases (lease_acquired,
	// lease_renew_failed, lease_lost, lease_released) unless an acquisition
	// names its own logger. Nil discards them.
	Logger hclog.Logger

	// Holder is the identity under which Acquire, elections and
	// semaphores of this Client hold leases, unless an acquisition names
	// another with WithHolder. Empty means a new NewHolderID() for each
	// Client, so that a restarted process never reuses one. At most 256
	// bytes. Two processes should not share a holder: the cluster treats
	// an acquisition by the same holder under the same lease secret as a
	// retry and returns the same lease; under another secret (another
	// Client) it is held off until the lease ends.
	Holder string

	// LeaseSecret is the lease secret that this Client sends with every
	// acquisition, renewal and release: only a caller that knows a lease's
	// secret may renew, release, acquire again or change the metadata of
	// the lease (a holder's name is readable by anyone with read, so it
	// proves nothing). Empty means a new NewLeaseSecret() for each Client,
	// which is what almost every program wants. Set it, with Holder, only
	// for a process that must take its leases back after a restart, and
	// keep it as secret as an ACL token. 32 to 128 characters of
	// [A-Za-z0-9_-].
	LeaseSecret string

	// Token is the secret of the ACL token sent with every request (header
	// X-Tenure-Token). Empty sends none, which a cluster with ACLs enabled
	// and the deny default refuses.
	Token string
}

// DefaultConfig returns a Config with the addresses from the environment
// variable TENURE_HTTP_ADDR (comma-separated), or 127.0.0.1:7500 when it is
// unset; the ACL token from TENURE_HTTP_TOKEN; the TLS files from
// TENURE_CACERT, TENURE_CLIENT_CERT and TENURE_CLIENT_KEY; and defaults that
// suit a lease holder: 10s per attempt, 5 retries (more during a
// failover), backoff from 25ms up to 2s.
func DefaultConfig() *Config {
	return &Config{
		Addresses: SplitAddresses(os.Getenv(EnvHTTPAddr)),
		Token:     os.Getenv(EnvHTTPToken),
		TLS: TLSConfig{
			CAFile:   os.Getenv(EnvCACert),
			CertFile: os.Getenv(EnvClientCert),
			KeyFile:  os.Getenv(EnvClientKey),
		},
		Timeout:        10 * time.Second,
		RetryMax:       5,
		RetryBaseDelay: 25 * time.Millisecond,
		RetryMaxDelay:  2 * time.Second,
	}
}

// SplitAddresses splits a comma-separated list of addresses, dropping
// blanks. It returns [DefaultHTTPAddr] when nothing is left.
func SplitAddresses(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	if len(out) == 0 {
		out = []string{DefaultHTTPAddr}
	}
	return out
}

// Validate checks every field and the relations between them. The error
// names the field to blame.
func (c *Config) Validate() error {
	if len(c.Addresses) == 0 {
		return errors.New("config: Addresses is empty")
	}
	for _, a := range c.Addresses {
		if _, err := c.normalizeAddress(a); err != nil {
			return fmt.Errorf("config: Addresses: %w", err)
		}
	}
	if c.HTTPClient != nil && c.HTTPClient.Timeout != 0 {
		return fmt.Errorf("config: HTTPClient.Timeout must be 0, got %v: attempts are bounded by Timeout", c.HTTPClient.Timeout)
	}
	if c.HTTPClient != nil && c.TLS.enabled() {
		return errors.New("config: TLS and HTTPClient are both set: set the TLS configuration on HTTPClient's transport instead")
	}
	if err := c.TLS.validate(); err != nil {
		return err
	}
	if c.Timeout <= 0 {
		return fmt.Errorf("config: Timeout must be positive, got %v", c.Timeout)
	}
	if len(c.Holder) > maxHolderBytes {
		return fmt.Errorf("config: Holder must be at most %d bytes, got %d", maxHolderBytes, len(c.Holder))
	}
	if c.LeaseSecret != "" {
		if p := wire.SecretProblem(c.LeaseSecret); p != "" {
			return fmt.Errorf("config: LeaseSecret %s", p)
		}
	}
	if c.RetryMax < 0 {
		return fmt.Errorf("config: RetryMax must not be negative, got %d", c.RetryMax)
	}
	if c.RetryMax > 0 {
		if c.RetryBaseDelay <= 0 {
			return fmt.Errorf("config: RetryBaseDelay must be positive when RetryMax > 0, got %v", c.RetryBaseDelay)
		}
		if c.RetryMaxDelay < c.RetryBaseDelay {
			return fmt.Errorf("config: RetryMaxDelay (%v) must be at least RetryBaseDelay (%v)", c.RetryMaxDelay, c.RetryBaseDelay)
		}
	}
	return nil
}

// normalizeAddress turns "host:port" or "scheme://host:port" into
// "scheme://host:port", the form the client keeps and reports. An address
// without a scheme is https when TLS is set, http otherwise.
func (c *Config) normalizeAddress(a string) (string, error) {
	scheme := "http"
	if c.TLS.enabled() {
		scheme = "https"
	}
	return normalizeWithScheme(a, scheme)
}

// normalizeWithScheme is normalizeAddress with the scheme to assume when a
// has none.
func normalizeWithScheme(a, scheme string) (string, error) {
	a = strings.TrimSpace(a)
	if a == "" {
		return "", errors.New("empty address")
	}
	if !strings.Contains(a, "://") {
		a = scheme + "://" + a
	}
	u, err := url.Parse(a)
	if err != nil {
		return "", fmt.Errorf("address %q: %w", a, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("address %q: scheme must be http or https", a)
	}
	if u.Host == "" {
		return "", fmt.Errorf("address %q: no host", a)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("address %q: only scheme, host and port are allowed", a)
	}
	return u.Scheme + "://" + u.Host, nil
}

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
