package worker

import (
	"errors"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client/wire"
)

// A failed gossip join is explained by the keys the servers announce when
// the cluster lists them, else by memberlist's error, and the fix named.
func TestDiagnoseJoin(t *testing.T) {
	server := func(keys ...string) wire.Member {
		return wire.Member{Name: "n1", Addr: "10.0.0.1:7946", Status: "alive", Role: "server", Meta: wire.MemberMeta{Role: "server", ID: "n1", Keys: keys}}
	}
	peers := []string{"10.0.0.1:7946"}
	for _, tc := range []struct {
		name     string
		peers    []string
		err      error
		mine     []string
		servers  []wire.Member
		keys     bool
		reason   string
		fixNames string
	}{
		{"no key, servers encrypt", peers, errors.New("remote state is encrypted and encryption is not configured"), nil, []wire.Member{server("aaaa")},
			true, "encrypted (key fingerprints aaaa) and this worker has no gossip key", EnvGossipKey},
		{"another key", peers, errors.New("no installed keys could decrypt the message"), []string{"bbbb"}, []wire.Member{server("aaaa")},
			true, "(fingerprints bbbb) are none of the servers' (aaaa)", "WithGossipKeys"},
		{"one of the servers' keys", peers, errors.New("timeout"), []string{"bbbb"}, []wire.Member{server("aaaa", "bbbb")},
			false, "no server answered", "WithGossipAdvertise"},
		{"key, servers plain", peers, errors.New("x"), []string{"bbbb"}, []wire.Member{server()},
			true, "the servers' gossip is not encrypted", "-gossip-key"},
		{"no key, WithJoin", peers, errors.New("remote state is encrypted and encryption is not configured"), nil, nil,
			true, "this worker has no gossip key", EnvGossipKey},
		{"another key, WithJoin", peers, errors.New("No installed keys could decrypt the message"), []string{"bbbb"}, nil,
			true, "cannot decrypt", "WithGossipKeys"},
		{"nothing answers", peers, errors.New("dial tcp 10.0.0.1:7946: connection refused"), nil, nil,
			false, "no server answered", "-gossip-addr"},
		{"cannot list", nil, errors.New("list the servers: connection refused"), nil, nil,
			false, "cannot ask the cluster", "WithJoin"},
		{"none listed", nil, nil, nil, []wire.Member{},
			false, "lists no alive server", "WithJoin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := diagnoseJoin(tc.peers, tc.err, tc.mine, tc.servers)
			if d.keys != tc.keys || !strings.Contains(d.reason, tc.reason) || !strings.Contains(d.fix, tc.fixNames) {
				t.Errorf("got keys=%v reason %q fix %q; want keys=%v, a reason with %q, a fix naming %q", d.keys, d.reason, d.fix, tc.keys, tc.reason, tc.fixNames)
			}
		})
	}
}

// A reason about keys is logged at Error on the first failure; a missing
// answer at Warn from the third; the same reason is not repeated at once.
func TestJoinReportSaysWhyOnce(t *testing.T) {
	var out strings.Builder
	r := joinReport{log: hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Info})}
	peers := []string{"10.0.0.1:7946"}
	r.failed(peers, errors.New("remote state is encrypted and encryption is not configured"), nil, nil)
	if got := strings.Count(out.String(), "[ERROR]"); got != 1 {
		t.Fatalf("after the first failure for want of a key: %d ERROR lines, want 1:\n%s", got, out.String())
	}
	r.failed(peers, errors.New("remote state is encrypted and encryption is not configured"), nil, nil)
	if got := strings.Count(out.String(), "\n"); got != 1 {
		t.Errorf("the same reason again at once: %d lines, want 1:\n%s", got, out.String())
	}
	r.joined(1)
	if !strings.Contains(out.String(), "works again") {
		t.Errorf("a join after a reported failure is not logged:\n%s", out.String())
	}
	out.Reset()
	for i := 1; i <= joinQuietFailures; i++ {
		r.failed(peers, errors.New("connection refused"), nil, nil)
		if warned := strings.Contains(out.String(), "[WARN]"); warned != (i == joinQuietFailures) {
			t.Errorf("after %d failures without an answer: warned %v, want %v", i, warned, i == joinQuietFailures)
		}
	}
}
