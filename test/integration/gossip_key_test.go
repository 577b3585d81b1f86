package integration

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/worker"
	"github.com/tenure-io/tenure/test/harness"
)

// newGossipKey is a new gossip key from `tenure keygen`.
func newGossipKey(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(mustRunTenure(t, nil, "keygen").stdout)
}

// TestGossipKeyRotation: three servers and a worker gossip under a key from
// `tenure keygen`; a server with another key never joins them; the
// operator rotates the key with `tenure operator keyring` while everyone
// stays a member; and a server restarted with its old -gossip-key flag
// comes back under the rotated key, which its data dir kept.
func TestGossipKeyRotation(t *testing.T) {
	oldKey := newGossipKey(t)
	newKey := newGossipKey(t)
	if oldKey == newKey {
		t.Fatal("keygen made the same key twice")
	}
	c := newCluster(t)
	c.nodeArgs = func(*testing.T, *node) []string { return []string{"-gossip-key", oldKey} }
	c.boot(t, 3)
	startDemoWorkerEnv(t, c, "scenes", "w1", 2*time.Second, []string{worker.EnvGossipKey + "=" + oldKey})
	cli := []string{client.EnvHTTPAddr + "=" + c.nodes[0].httpAddr}

	// Everyone is a member under the old key, the worker included.
	everyoneHolds := func(key string) func() error {
		return func() error {
			kr, err := keyringOf(c, 0)
			if err != nil {
				return err
			}
			if kr.Members != 4 || len(kr.Keys) != 1 || kr.Keys[0].Fingerprint != fingerprint(t, key) || kr.Keys[0].Primary != 4 {
				return fmt.Errorf("keyring %+v, want 4 members on key %s alone", kr, fingerprint(t, key))
			}
			return nil
		}
	}
	harness.WaitFor(t, electionTimeout, everyoneHolds(oldKey))

	t.Run("a server with another key never joins", func(t *testing.T) {
		stranger := c.addNode(t, "-join", c.nodes[0].gossipAddr, "-gossip-key", newKey)
		harness.Holds(t, 3*time.Second, func() error {
			if status, ok := c.memberStatus(t, 0, c.nodes[stranger].id); ok {
				return fmt.Errorf("n1 lists the stranger %s as %s", c.nodes[stranger].id, status)
			}
			return nil
		})
		c.kill(t, stranger)
	})

	// Using a key before every member holds it would cut them off.
	if r := runTenure(t, cli, "operator", "keyring", "use", newKey); r.code == 0 || !strings.Contains(r.stderr, "install it everywhere first") {
		t.Fatalf("use before install: exit %d, %s; want refused", r.code, r.stderr)
	}

	// Rotate: each step waits until every member has followed.
	for _, step := range [][]string{
		{"operator", "keyring", "install", newKey},
		{"operator", "keyring", "use", newKey},
		{"operator", "keyring", "remove", oldKey},
	} {
		mustRunTenure(t, cli, step...)
	}
	harness.WaitFor(t, electionTimeout, everyoneHolds(newKey))

	// A restarted server keeps the rotated keyring of its data dir.
	c.stop(t, 2)
	c.restart(t, 2)
	harness.WaitFor(t, electionTimeout, func() error {
		if status, ok := c.memberStatus(t, 0, c.nodes[2].id); !ok || status != "alive" {
			return fmt.Errorf("n1 sees n3 as %q after its restart", status)
		}
		return everyoneHolds(newKey)()
	})
}

// keyringOf reads GET /v1/operator/keyring of node i.
func keyringOf(c *cluster, i int) (client.Keyring, error) {
	var kr client.Keyring
	r, err := c.try(c.nodes[i].httpAddr, http.MethodGet, "/v1/operator/keyring", nil)
	if err != nil {
		return kr, err
	}
	if r.Status != http.StatusOK {
		return kr, fmt.Errorf("keyring of %s: %v", c.nodes[i].id, r)
	}
	return kr, json.Unmarshal(r.Body, &kr)
}

func fingerprint(t *testing.T, key string) string {
	t.Helper()
	b, err := base64.StdEncoding.DecodeString(key)
	if err != nil {
		t.Fatal(err)
	}
	return client.KeyFingerprint(b)
}

// TestWorkerWithoutTheGossipKeySaysSo: a worker started without the
// cluster's gossip key, or with another one, cannot join the servers'
// gossip. Within seconds it says so at ERROR, and names the option that
// fixes it; the server's lines about the refused gossip name the worker
// (its node name and gossip address), not only a connection's source port.
func TestWorkerWithoutTheGossipKeySaysSo(t *testing.T) {
	key := newGossipKey(t)
	other := newGossipKey(t)
	c := newCluster(t)
	c.nodeArgs = func(*testing.T, *node) []string { return []string{"-gossip-key", key} }
	c.boot(t, 1)
	for _, tc := range []struct {
		name, id string
		env      []string
		want     []string // in the worker's ERROR line
	}{
		{"no key", "keyless", nil, []string{"no gossip key", "TENURE_GOSSIP_KEY", "WithGossipKeys"}},
		{"another key", "wrongkey", []string{worker.EnvGossipKey + "=" + other}, []string{fingerprint(t, other), fingerprint(t, key), "TENURE_GOSSIP_KEY"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := startDemoWorkerEnv(t, c, "scenes", tc.id, 2*time.Second, tc.env)
			harness.WaitFor(t, 5*time.Second, func() error {
				for _, line := range strings.Split(tail(w.logPath, 50), "\n") {
					if !strings.Contains(line, "[ERROR]") || !strings.Contains(line, "gossip") {
						continue
					}
					for _, s := range tc.want {
						if !strings.Contains(line, s) {
							return fmt.Errorf("the worker's error %q does not say %q", line, s)
						}
					}
					return nil
				}
				return fmt.Errorf("no ERROR line about gossip in the worker's output:\n%s", tail(w.logPath, 10))
			})
			if tc.env != nil {
				return // encrypted under another key: the server cannot read who sent it
			}
			harness.WaitFor(t, 5*time.Second, func() error {
				for _, line := range strings.Split(tail(c.nodes[0].logPath, 200), "\n") {
					if strings.Contains(line, "memberlist") && strings.Contains(line, "not encrypted") {
						if !strings.Contains(line, "member="+tc.id+"#") || !strings.Contains(line, "member_addr=127.0.0.1:") {
							return fmt.Errorf("the server's line %q does not name the worker %s and its gossip address", line, tc.id)
						}
						return nil
					}
				}
				return fmt.Errorf("the server logged nothing about the refused gossip")
			})
		})
	}
}
