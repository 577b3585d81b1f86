package integration

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
)

// TestUIProxyOpensThePageOfAMutualTLSCluster: servers with
// -tls-verify-incoming and ACLs, as the production examples start them,
// refuse a browser, which has no client certificate. `tenure ui`, given
// the operator's certificate, serves the page on a loopback address only,
// and the page, in Chromium, shows the cluster through it with the token
// typed into it.
func TestUIProxyOpensThePageOfAMutualTLSCluster(t *testing.T) {
	needChromium(t)
	c, tc := startSecureCluster(t, 3, "operator")
	boot, _ := c.bootstrapTLS(t, "admin", tc)

	// A browser's request: the CA, no client certificate.
	ca, err := os.ReadFile(tc.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	browserLike := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	if r, err := browserLike.Get("https://" + c.nodes[0].httpAddr + "/ui"); err == nil {
		r.Body.Close()
		t.Fatalf("GET /ui without a client certificate answered %s, want the TLS handshake refused", r.Status)
	}

	if out, code := runUI(t, "-listen", "0.0.0.0:0"); code != exitUsageCode || !strings.Contains(out, "must be a loopback address") {
		t.Errorf("tenure ui -listen 0.0.0.0:0: exit %d, output %q; want 2 and the loopback rule", code, out)
	}

	p := c.startCLI(t, t.TempDir(), "ui", "ui", "-listen", "127.0.0.1:0",
		"-ca-file", tc.CAFile, "-client-cert", tc.CertFile, "-client-key", tc.KeyFile)
	var base string
	poll.WaitFor(t, 10*time.Second, func() error {
		m := regexp.MustCompile(`at (http://127\.0\.0\.1:\d+)/ui`).FindStringSubmatch(tail(p.logPath, 5))
		if m == nil {
			return fmt.Errorf("tenure ui has not said where it serves: %q", tail(p.logPath, 5))
		}
		base = m[1]
		return nil
	})
	r, err := http.Get(base + "/ui")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 200 || !strings.Contains(string(page), "tenure") {
		t.Fatalf("GET /ui through tenure ui: %s %.200q", r.Status, page)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/status", nil)
	req.Header.Set(client.HeaderToken, boot.SecretID)
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != 200 {
		t.Fatalf("GET /v1/status through tenure ui: %v, %v", r, err)
	} else {
		r.Body.Close()
	}

	b := newBrowser(t)
	b.open(base+"/ui", boot.SecretID)
	b.waitTrue(10*time.Second, "the page, through tenure ui, lists three servers and a leader",
		`document.querySelectorAll('#servers tbody tr').length === 3 && document.querySelector('#servers .badge.ok')`)
}

// exitUsageCode is the exit code of a wrong command line.
const exitUsageCode = 2

// runUI runs `tenure ui` with args, for a command line it refuses at once.
func runUI(t *testing.T, args ...string) (string, int) {
	t.Helper()
	r := runTenure(t, nil, append([]string{"ui"}, args...)...)
	return r.stdout + r.stderr, r.code
}
