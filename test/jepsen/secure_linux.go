package jepsen

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/tenure-io/tenure/cluster"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/worker"
)

// secure is the security of a run: every run of the suite has TLS (mutual,
// on the API and on Raft), gossip encryption and ACLs with default deny on,
// so the configuration docs/security.md tells operators to run is the one
// proven under faults. Each agent gets a token of its own, bound to its
// name as holder prefix.
type secure struct {
	dir       string
	caFile    string
	gossipKey string
	// plain: the servers run without TLS, with ACLs and the gossip key
	// still on: the configuration of a negative control, which only a
	// server built with tenure_unsafe_plainraft starts (ACLs need Raft
	// over mutual TLS).
	plain bool
	// The harness's own client certificate, and its management token once
	// the cluster is bootstrapped.
	certFile, keyFile string
	token             string
}

// newSecure makes a CA, a server certificate for each server (for its
// name and its address in the run's network), a client certificate, and a
// gossip key, under dir.
func newSecure(dir string, servers map[string]string, plain bool) (*secure, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	ca, err := cluster.NewCertAuthority(cluster.CAOptions{})
	if err != nil {
		return nil, err
	}
	s := &secure{dir: dir, caFile: filepath.Join(dir, cluster.CACertFile), plain: plain}
	if err := os.WriteFile(s.caFile, ca.CertPEM(), 0o644); err != nil {
		return nil, err
	}
	for name, addr := range servers {
		pair, err := ca.IssueServer(cluster.ServerCertOptions{NodeID: name, IPAddresses: []net.IP{net.ParseIP(addr)}})
		if err != nil {
			return nil, err
		}
		cert, key := s.serverFiles(name)
		if err := cluster.WriteCertPair(cert, key, pair); err != nil {
			return nil, err
		}
	}
	pair, err := ca.IssueClient(cluster.ClientCertOptions{Name: "jepsen"})
	if err != nil {
		return nil, err
	}
	s.certFile, s.keyFile = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	if err := cluster.WriteCertPair(s.certFile, s.keyFile, pair); err != nil {
		return nil, err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	s.gossipKey = base64.StdEncoding.EncodeToString(key)
	return s, nil
}

func (s *secure) serverFiles(name string) (cert, key string) {
	return filepath.Join(s.dir, name+".pem"), filepath.Join(s.dir, name+"-key.pem")
}

// serverArgs are the security flags of server name.
func (s *secure) serverArgs(name string) []string {
	if s.plain {
		return []string{"-gossip-key", s.gossipKey, "-acl-enabled"}
	}
	cert, key := s.serverFiles(name)
	return []string{"-tls-cert-file", cert, "-tls-key-file", key, "-tls-ca-file", s.caFile, "-tls-verify-incoming",
		"-gossip-key", s.gossipKey, "-acl-enabled"}
}

// clientTLS is the TLS configuration of the harness's requests.
func (s *secure) clientTLS() (*tls.Config, error) {
	if s.plain {
		return nil, nil
	}
	return client.TLSConfig{CAFile: s.caFile, CertFile: s.certFile, KeyFile: s.keyFile}.Build()
}

// agentEnv is the environment of an agent that acts with token.
func (s *secure) agentEnv(token string) []string {
	if s.plain {
		return []string{worker.EnvGossipKey + "=" + s.gossipKey, client.EnvHTTPToken + "=" + token}
	}
	return []string{
		client.EnvCACert + "=" + s.caFile,
		client.EnvClientCert + "=" + s.certFile,
		client.EnvClientKey + "=" + s.keyFile,
		worker.EnvGossipKey + "=" + s.gossipKey,
		client.EnvHTTPToken + "=" + token,
	}
}

// agentPolicy grants the agents what their workloads do, on every key.
const agentPolicy = "jepsen-agents"

// bootstrap takes the management token, unless it has it already, and
// makes the agents' policy; it is the harness's first request to a fresh
// cluster. api makes the harness's client, with a token.
func (s *secure) bootstrap(ctx context.Context, api func(token string) (*client.Client, error)) error {
	if s.token == "" {
		c, err := api("")
		if err != nil {
			return err
		}
		boot, err := c.ACL().Bootstrap(ctx)
		if err != nil {
			return fmt.Errorf("acl bootstrap: %w", err)
		}
		s.token = boot.SecretID
	}
	c, err := api(s.token)
	if err != nil {
		return err
	}
	_, err = c.ACL().SetPolicy(ctx, agentPolicy, client.ACLPolicySpec{Rules: []client.ACLRule{
		{Prefix: "", Rights: []string{client.RightRead, client.RightWrite, client.RightRevoke}},
	}})
	if err != nil {
		return fmt.Errorf("acl policy: %w", err)
	}
	return nil
}

// agentToken makes the token of agent name: the agents' policy, bound to
// holders that start with the agent's name (every holder an agent uses
// does).
func (s *secure) agentToken(ctx context.Context, c *client.Client, name string) (string, error) {
	tok, err := c.ACL().CreateToken(ctx, client.ACLTokenSpec{Description: "jepsen agent " + name,
		Policies: []string{agentPolicy}, HolderPrefix: name})
	if err != nil {
		return "", fmt.Errorf("acl token of %s: %w", name, err)
	}
	return tok.SecretID, nil
}

// authorize adds the harness's token to a request.
func (s *secure) authorize(r *http.Request) {
	if s.token != "" {
		r.Header.Set(client.HeaderToken, s.token)
	}
}
