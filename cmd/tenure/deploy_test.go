package main

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// readEnvFile reads KEY=VALUE lines as systemd's EnvironmentFile does
// (comments and blank lines skipped), into env.
func readEnvFile(t *testing.T, path string, env map[string]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("%s: %q is not KEY=VALUE", path, line)
		}
		env[k] = v
	}
}

// The systemd files for three hosts load as the unit loads them (the
// shared file, then the host's) into settings that a server accepts, with
// the secure settings on, and make one cluster: distinct ids and
// addresses, each joining the other two, each with its own certificate.
func TestSystemdFilesForThreeHosts(t *testing.T) {
	dir := filepath.Join("..", "..", "deploy", "systemd")
	gossip := map[string]string{}
	for i := 1; i <= 3; i++ {
		env := map[string]string{}
		readEnvFile(t, filepath.Join(dir, "tenure.env"), env)
		readEnvFile(t, filepath.Join(dir, "host-tenure-"+string(rune('0'+i))+".env"), env)
		if !strings.HasPrefix(env["TENURE_GOSSIP_KEY"], "REPLACE") {
			t.Errorf("the shipped gossip key is %q, want the placeholder that stops a server until it is replaced", env["TENURE_GOSSIP_KEY"])
		}
		env["TENURE_GOSSIP_KEY"] = "DyEhAzlf/nISZNGZVhELwf0JRnT9JncHru5yJVoAMaM=" // as an operator would
		s, err := loadServerSettings(nil, func(k string) string { return env[k] })
		if err != nil {
			t.Fatalf("host %d: %v", i, err)
		}
		c := s.cluster
		if err := c.Validate(); err != nil {
			t.Errorf("host %d: %v", i, err)
		}
		if !c.ACLEnabled || !s.cluster.TLS.VerifyIncoming || s.cluster.TLS.CAFile == "" || !strings.Contains(s.cluster.TLS.CertFile, c.NodeID) || !strings.Contains(s.cluster.TLS.KeyFile, c.NodeID) {
			t.Errorf("host %d (%s): ACLs %t, verify incoming %t, CA %q, certificate %q and key %q: want all on and the files of this node", i, c.NodeID, c.ACLEnabled, s.cluster.TLS.VerifyIncoming, s.cluster.TLS.CAFile, s.cluster.TLS.CertFile, s.cluster.TLS.KeyFile)
		}
		if c.BootstrapExpect != 3 || len(c.Join) != 2 || slices.Contains(c.Join, c.GossipAddr) {
			t.Errorf("host %d: bootstrap-expect %d, join %v (gossip %s): want 3 and the two others", i, c.BootstrapExpect, c.Join, c.GossipAddr)
		}
		gossip[c.NodeID] = c.GossipAddr
		for _, j := range c.Join {
			if !strings.HasSuffix(j, ":7502") {
				t.Errorf("host %d joins %s, not a gossip port", i, j)
			}
		}
	}
	if len(gossip) != 3 {
		t.Errorf("node ids %v: want three distinct ones", gossip)
	}
}
