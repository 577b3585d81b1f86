package membership

import (
	"encoding/json"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/tenure-io/tenure/cluster/internal/rounds"
)

// Dead voters are removed only while the failed ones are a minority of the
// voters, and never below a majority of the configured size.
func TestRemovableDeadVoters(t *testing.T) {
	tests := []struct {
		name                 string
		voters, failed, size int
		want                 int
	}{
		{name: "none failed", voters: 3, failed: 0, size: 3, want: 0},
		{name: "one of three", voters: 3, failed: 1, size: 3, want: 1},
		{name: "two of three: no majority would commit it", voters: 3, failed: 2, size: 3, want: 0},
		{name: "one of two", voters: 2, failed: 1, size: 3, want: 0},
		{name: "two of five", voters: 5, failed: 2, size: 5, want: 2},
		{name: "three of five", voters: 5, failed: 3, size: 5, want: 0},
		{name: "five, shrunk to three: keeps a majority of five", voters: 3, failed: 1, size: 5, want: 0},
		{name: "four of a size three cluster with an operator's extra voter", voters: 4, failed: 1, size: 3, want: 1},
		{name: "two of four", voters: 4, failed: 2, size: 3, want: 0},
		{name: "three forged voters of six", voters: 6, failed: 3, size: 3, want: 0},
		{name: "unknown size: no voter is removed", voters: 3, failed: 1, size: 0, want: 0},
		{name: "unknown size, five voters, two failed: none removed", voters: 5, failed: 2, size: 0, want: 0},
		{name: "single server", voters: 1, failed: 0, size: 1, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := removableDeadVoters(tt.voters, tt.failed, tt.size); got != tt.want {
				t.Errorf("removableDeadVoters(voters %d, failed %d, size %d) = %d, want %d", tt.voters, tt.failed, tt.size, got, tt.want)
			}
		})
	}
}

func TestClusterNameProof(t *testing.T) {
	prove := ClusterNameProof("prod")
	if err := prove(Member{Meta: MemberMeta{Role: "server", ClusterName: "prod"}}); err != nil {
		t.Errorf("a member of cluster prod: %v, want nil", err)
	}
	for _, name := range []string{"", "staging", "Prod"} {
		if err := prove(Member{Meta: MemberMeta{Role: "server", ClusterName: name}}); !errors.Is(err, ErrNotProven) {
			t.Errorf("a member of cluster %q: %v, want ErrNotProven", name, err)
		}
	}
}

// A server is caught up while the leader heard from it recently and its
// log is within the lag of the commit index.
func TestCaughtUp(t *testing.T) {
	r := Rules{Recent: time.Second, CatchUpLag: 10}
	now := time.Now()
	tests := []struct {
		name string
		ct   rounds.Contact
		ok   bool
		want bool
	}{
		{name: "never answered", ok: false, want: false},
		{name: "answered now, at the commit index", ct: rounds.Contact{At: now, LastLog: 100}, ok: true, want: true},
		{name: "answered now, within the lag", ct: rounds.Contact{At: now, LastLog: 90}, ok: true, want: true},
		{name: "answered now, behind", ct: rounds.Contact{At: now, LastLog: 89}, ok: true, want: false},
		{name: "answered long ago", ct: rounds.Contact{At: now.Add(-2 * time.Second), LastLog: 100}, ok: true, want: false},
	}
	for _, tt := range tests {
		if got := r.CaughtUp(tt.ct, tt.ok, now, 100); got != tt.want {
			t.Errorf("%s: caughtUp = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// The admission check runs once per announcement of a server, on the
// maintain goroutine; until it has, the member counts as not proven, and
// its HTTP address is not used for forwarding.
func TestProveMembersOncePerAnnouncement(t *testing.T) {
	calls := 0
	g := &Gossip{
		cfg: Config{Prove: func(m Member) error {
			calls++
			return ClusterNameProof("prod")(m)
		}},
		members: map[string]*memberEntry{},
	}
	announce := func(name, cluster string) {
		meta, _ := json.Marshal(MemberMeta{Role: "server", ID: name, HTTPAddr: name + ":7500", ClusterName: cluster})
		g.record(&memberlist.Node{Name: name, Addr: net.IPv4(127, 0, 0, 1), Port: 7502, Meta: meta}, "alive")
	}
	announce("n1", "prod")
	announce("x1", "staging")
	if got := g.HTTPAddrOf("n1"); got != "" {
		t.Errorf("before the check: HTTPAddrOf(n1) = %q, want none", got)
	}
	g.proveMembers()
	g.proveMembers()
	if calls != 2 {
		t.Errorf("after two rounds: %d checks, want 2 (one per announcement)", calls)
	}
	if got := g.HTTPAddrOf("n1"); got != "n1:7500" {
		t.Errorf("HTTPAddrOf(n1) = %q, want n1:7500", got)
	}
	if got := g.HTTPAddrOf("x1"); got != "" {
		t.Errorf("HTTPAddrOf(x1) of another cluster = %q, want none", got)
	}
	announce("x1", "prod") // it announces again, now with this cluster's name
	g.proveMembers()
	if calls != 3 || g.HTTPAddrOf("x1") != "x1:7500" {
		t.Errorf("after a new announcement: %d checks, HTTPAddrOf(x1) = %q; want 3, x1:7500", calls, g.HTTPAddrOf("x1"))
	}
}
