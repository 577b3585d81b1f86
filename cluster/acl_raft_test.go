package cluster_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/forgeraft"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// forgeLease sends one forged AppendEntries, carrying an acquisition of
// key by holder, to the Raft port of a follower of c, and waits until
// every server has applied it; it returns the lease as the leader has it.
func forgeLease(t *testing.T, c *inproc.Cluster, key, holder string) (fsm.Lease, forgeraft.Result) {
	t.Helper()
	l := c.Leader()
	target := (l + 1) % c.Len()
	cmd := fsm.Encode(fsm.Acquire{Key: key, Holder: holder, TTL: time.Hour})
	res, err := forgeraft.Append(c.Peer(target).RaftAddr, cmd, 10*time.Second)
	if err != nil {
		t.Fatalf("forged append to %s: %v", c.Peer(target).ID, err)
	}
	var got fsm.Lease
	harness.WaitUntil(t, 20*time.Second, "every server to apply the forged lease", func() bool {
		for i := range c.Len() {
			v, err := c.Node(i).Get(harness.Context(t, time.Second), key, cluster.Stale)
			if err != nil || !v.Held || v.Holder != holder {
				return false
			}
			got = *v.Lease
		}
		return true
	})
	return got, res
}

// Plain Raft authenticates nobody: one forged AppendEntries of a newer
// term, sent by someone who knows only a follower's Raft port, writes a
// lease of the sender's choice, which the cluster then commits on every
// server. This is why ACLs refuse to start on plain Raft
// (TestACLsNeedAuthenticatedRaft); with mutual TLS the same request is
// refused in the handshake (TestRaftOverMutualTLS).
func TestForgedAppendEntriesOnPlainRaft(t *testing.T) {
	c := inproc.Start(t, 3, inproc.Options{TCP: true})
	got, res := forgeLease(t, c, "forged/k", "mallory")
	t.Logf("forged lease %s held by %s, token %d, on all 3 servers, after %d requests (forged term %d, index %d)", got.Key, got.Holder, got.Token, res.Requests, res.Term, res.Index)
}

// With ACLs on, Raft must be authenticated: a node that would listen for
// Raft on plain TCP is refused at start, naming the field and what to add.
// Mutual TLS, or an in-memory transport (no port at all), starts.
func TestACLsNeedAuthenticatedRaft(t *testing.T) {
	plain := inproc.Config("n1", t.TempDir())
	plain.RaftAddr, plain.ACLEnabled = harness.FreeAddr(t), true
	plain.InitialCluster = []cluster.Peer{{ID: "n1", RaftAddr: plain.RaftAddr, HTTPAddr: plain.HTTPAddr}}
	n, err := cluster.New(plain)
	if err == nil {
		n.Shutdown()
		// The configuration started: show what it protects.
		c := inproc.Start(t, 3, inproc.Options{TCP: true, Tweak: func(cfg *cluster.Config) { cfg.ACLEnabled = true }})
		got, res := forgeLease(t, c, "forged/k", "mallory")
		t.Fatalf("a node with ACLs on and Raft on plain TCP started; in such a cluster %d unauthenticated Raft requests committed lease %s to %s (token %d) on all 3 servers", res.Requests, got.Key, got.Holder, got.Token)
	}
	if !errors.Is(err, cluster.ErrACLsNeedAuthenticatedRaft) {
		t.Errorf("got %v, want an ErrACLsNeedAuthenticatedRaft", err)
	}
	for _, want := range []string{"acl-enabled", "TLS"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}

	p := newPKI(t)
	for _, tc := range []struct {
		name  string
		tweak func(*cluster.Config)
	}{
		{"mutual TLS", func(cfg *cluster.Config) { cfg.TLS = p.server(cfg.NodeID, cfg.ClusterName) }},
		{"in-memory transport", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := inproc.Start(t, 1, inproc.Options{TCP: tc.tweak != nil, Tweak: func(cfg *cluster.Config) {
				cfg.ACLEnabled = true
				if tc.tweak != nil {
					tc.tweak(cfg)
				}
			}})
			if _, err := c.Node(c.Leader()).ACL().Bootstrap(harness.Context(t, 10*time.Second)); err != nil {
				t.Fatalf("bootstrap with ACLs on %s: %v", tc.name, err)
			}
		})
	}
}
