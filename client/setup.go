package client

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
)

// SetupError is a failure that no retry can cure: the client's own
// configuration does not fit the server at Address. The server speaks
// plain HTTP to an https:// address, or TLS to an http:// one; the
// client cannot verify the server's certificate, or the server refuses
// the client's; or the address answers, but not as tenure's HTTP API (a
// Raft or gossip port, another program). The client does not retry it:
// it moves on to the next of Config.Addresses, and the call fails with
// it once every address has failed so. Only configured addresses are
// judged so; a leader address that an answer named is left as the router
// leaves any address that fails.
//
// It wraps what the attempt failed with: a *tls.CertificateVerificationError,
// http.ErrSchemeMismatch, an *APIError, ...
type SetupError struct {
	// Address is the server, "scheme://host:port".
	Address string
	// Problem says what is wrong and what to do, for people.
	Problem string
	// Settings are the Config fields that fix it, likeliest first:
	// "Addresses", "TLS.CAFile", "TLS.CertFile" (with TLS.KeyFile),
	// "TLS.ServerName".
	Settings []string
	// Err is what the attempt failed with.
	Err error
}

// Error implements error: "<address>: <problem> (<cause>); set <settings>".
func (e *SetupError) Error() string {
	help := make([]string, len(e.Settings))
	for i, s := range e.Settings {
		help[i] = settingHelp[s]
	}
	return fmt.Sprintf("%s: %s (%v); set %s", e.Address, e.Problem, e.Err, strings.Join(help, " or "))
}

func (e *SetupError) Unwrap() error { return e.Err }

// settingHelp names each setting of SetupError.Settings with the
// environment variable DefaultConfig reads it from.
var settingHelp = map[string]string{
	"Addresses":      "Config.Addresses (" + EnvHTTPAddr + ")",
	"TLS.CAFile":     "Config.TLS.CAFile (" + EnvCACert + ")",
	"TLS.CertFile":   "Config.TLS.CertFile and KeyFile (" + EnvClientCert + ", " + EnvClientKey + ")",
	"TLS.ServerName": "Config.TLS.ServerName",
}

// setupProblem returns the *SetupError that err, the failure of an
// attempt sent to addr, proves; nil when a retry might cure it. closes
// counts how often addr closed a connection without an answer in this
// call, this attempt included. An address that has answered a call of
// this client before is tenure's HTTP API: only TLS failures count there.
func (c *Client) setupProblem(addr string, err error, closes int) *SetupError {
	proven := c.route.hasAnswered(addr)
	se := &SetupError{Address: addr, Err: err}
	var (
		ae  *APIError
		rh  tls.RecordHeaderError
		cve *tls.CertificateVerificationError
		ua  x509.UnknownAuthorityError
		he  x509.HostnameError
		oe  *net.OpError
	)
	switch {
	case errors.As(err, &ae):
		switch {
		case ae.Code != "":
			return nil // tenure's own answer
		case ae.StatusCode == http.StatusBadRequest && strings.HasPrefix(addr, "http://") && strings.Contains(strings.ToUpper(ae.Message), "HTTPS"):
			se.Problem = "the server speaks TLS, not plain HTTP: address it as https://host:port"
			se.Settings = []string{"Addresses"}
		case !proven && (ae.StatusCode == http.StatusNotFound || ae.StatusCode == http.StatusMethodNotAllowed):
			se.Problem = fmt.Sprintf("the server answered %d without tenure's error body: this is not tenure's HTTP API (the wrong port?)", ae.StatusCode)
			se.Settings = []string{"Addresses"}
		default:
			return nil
		}
	case errors.Is(err, http.ErrSchemeMismatch):
		se.Problem = "the server speaks plain HTTP, not TLS: address it as http://host:port (an address without a scheme means https once a TLS setting is made)"
		se.Settings = []string{"Addresses"}
		if c.cfg.TLS.CAFile != "" {
			se.Settings = append(se.Settings, "TLS.CAFile")
		}
	case errors.As(err, &rh):
		se.Problem = "the server answered neither TLS nor HTTP: this is not tenure's HTTP API (the wrong port?)"
		se.Settings = []string{"Addresses"}
	case errors.As(err, &cve) && errors.As(err, &he):
		se.Problem = "the server's certificate is not valid for this host: use an address that the certificate names, or the name to verify"
		se.Settings = []string{"Addresses", "TLS.ServerName"}
	case errors.As(err, &cve) && errors.As(err, &ua):
		se.Problem = "the server's certificate is not signed by a CA that the client trusts: give the client the cluster's CA certificate"
		se.Settings = []string{"TLS.CAFile"}
	case errors.As(err, &cve):
		se.Problem = "the client cannot verify the server's certificate"
		se.Settings = []string{"TLS.CAFile"}
	case errors.As(err, &oe) && oe.Op == "remote error":
		// A TLS alert: the server refused the handshake.
		if c.noClientCert() {
			se.Problem = "the server refused the TLS handshake: it requires a client certificate"
		} else {
			se.Problem = "the server refused the TLS handshake: it does not accept the client certificate (is it signed by the cluster's CA?)"
		}
		se.Settings = []string{"TLS.CertFile"}
	case closes >= 2 && !proven && strings.HasPrefix(addr, "https://"):
		// Under TLS 1.3 the client's handshake ends before the server
		// checks the client's certificate: a server that refuses it may
		// reset the connection under the request instead of sending an
		// alert the client reads (the case above).
		if c.noClientCert() {
			se.Problem = fmt.Sprintf("the server closed %d connections after the TLS handshake without an answer: it requires a client certificate (or this is not tenure's HTTP API)", closes)
		} else {
			se.Problem = fmt.Sprintf("the server closed %d connections after the TLS handshake without an answer: it does not accept the client certificate (is it signed by the cluster's CA?), or this is not tenure's HTTP API", closes)
		}
		se.Settings = []string{"TLS.CertFile", "Addresses"}
	case closes >= 2 && !proven:
		se.Problem = fmt.Sprintf("the server closed %d connections without an HTTP answer: this is not tenure's HTTP API (a Raft or gossip port?)", closes)
		se.Settings = []string{"Addresses"}
	default:
		return nil
	}
	return se
}

// noClientCert reports whether the client presents no certificate.
func (c *Client) noClientCert() bool {
	return c.cfg.TLS.CertFile == "" && (c.cfg.TLS.Config == nil || len(c.cfg.TLS.Config.Certificates) == 0)
}

// closedUnanswered reports whether err is a connection that was
// established and then closed or reset before any answer came: what a
// port that does not speak HTTP does, and, once, a server that crashed.
func closedUnanswered(err error) bool {
	var te *transportError
	if !errors.As(err, &te) || te.refused() {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// isSetupError reports whether err is a *SetupError.
func isSetupError(err error) bool {
	var se *SetupError
	return errors.As(err, &se)
}
