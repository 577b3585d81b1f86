package cluster_test

import (
	"crypto/tls"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/cluster/internal/certs"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
	tlspki "github.com/tenure-io/tenure/test/harness/pki"
)

// pki is a CA in a temp dir that writes certificate files.
type pki struct {
	t *testing.T
	*tlspki.PKI
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	return &pki{t: t, PKI: tlspki.New(t)}
}

// client writes a client certificate of p's CA, for the client app, as
// file and returns mutual TLS settings with it.
func (p *pki) client(file string) certs.Files {
	pair, err := p.CA.IssueClient(certs.ClientOptions{Name: "app"})
	return p.Write(p.t, file, pair, err)
}

// server writes a server certificate of p's CA for node id of cluster
// clusterName and returns mutual TLS settings with it.
func (p *pki) server(id, clusterName string) certs.Files {
	pair, err := p.CA.IssueServer(certs.ServerOptions{NodeID: id, ClusterName: clusterName})
	return p.Write(p.t, "server-"+id+"-"+clusterName, pair, err)
}

// peerStream dials Raft peers with a given TLS configuration, as an
// impostor would.
type peerStream struct {
	net.Listener
	cfg *tls.Config
}

func (s peerStream) Dial(addr raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return tls.DialWithDialer(&net.Dialer{Timeout: timeout}, "tcp", string(addr), s.cfg)
}

func (s peerStream) Addr() net.Addr { return s.Listener.Addr() }

// impostor is a Raft transport that presents the certificate of files.
func impostor(t *testing.T, files certs.Files) raft.Transport {
	t.Helper()
	cfg, err := certs.ClientConfig(files)
	if err != nil {
		t.Fatal(err)
	}
	cfg.InsecureSkipVerify = true // it would talk to anyone; the question is whether anyone talks to it
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tr := raft.NewNetworkTransportWithLogger(peerStream{Listener: ln, cfg: cfg}, 1, 2*time.Second, hclog.NewNullLogger())
	t.Cleanup(func() { tr.Close() })
	return tr
}

// startProdTLS starts three servers of cluster "prod" over TCP, each with
// a server certificate of a new CA, and then applies tweak (if not nil) to
// each config. It returns the CA and the cluster.
func startProdTLS(t *testing.T, tweak func(*cluster.Config)) (*pki, *inproc.Cluster) {
	t.Helper()
	p := newPKI(t)
	c := inproc.Start(t, 3, inproc.Options{TCP: true, Tweak: func(cfg *cluster.Config) {
		cfg.ClusterName = "prod"
		cfg.TLS = p.server(cfg.NodeID, "prod")
		if tweak != nil {
			tweak(cfg)
		}
	}})
	return p, c
}

// Raft runs over mutual TLS when the servers have certificates: the
// cluster elects a leader and commits; a peer that presents a client
// certificate of the same CA, a server certificate of another cluster, or
// a server certificate of another CA cannot make a server take a newer
// term, which any Raft peer could do in plain TCP.
func TestRaftOverMutualTLS(t *testing.T) {
	p, c := startProdTLS(t, nil)
	l := c.Leader()
	got, _, err := c.Node(l).Acquire(harness.Context(t, 10*time.Second), cluster.AcquireRequest{Secret: testSecret, Key: "k", Holder: "h", TTL: time.Minute})
	if err != nil {
		t.Fatalf("acquire over Raft on TLS: %v", err)
	}
	// The leadership check's channel shares the Raft port and its TLS.
	before := cluster.RaftOf(c.Node(l)).LastIndex()
	if _, err := c.Node(l).Renew(harness.Context(t, 10*time.Second), "k", "h", testSecret, got.Token); err != nil {
		t.Fatalf("renew with the confirmation channel on TLS: %v", err)
	}
	if _, err := c.Node(l).Get(harness.Context(t, 10*time.Second), "k", cluster.Linearizable); err != nil {
		t.Fatalf("linearizable read with the confirmation channel on TLS: %v", err)
	}
	if after := cluster.RaftOf(c.Node(l)).LastIndex(); after != before {
		t.Fatalf("a renewal and a read wrote to the log (index %d to %d)", before, after)
	}
	target := (l + 1) % 3
	peer := c.Peer(target)

	other := newPKI(t)
	for _, tc := range []struct {
		name  string
		files certs.Files
	}{
		{"a client certificate of the cluster's CA", p.client("client-app")},
		{"a server certificate of another cluster", p.server("n9", "staging")},
		{"a server certificate of another CA", other.server("n9", "prod")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := c.Node(target).Status().Term
			tr := impostor(t, tc.files)
			resp, err := forgeLeader(tr, peer, before+100)
			if err == nil {
				t.Fatalf("the server answered the impostor's append request: %+v", resp)
			}
			if after := c.Node(target).Status().Term; after != before {
				t.Fatalf("the impostor moved %s from term %d to %d", peer.ID, before, after)
			}
		})
	}
}

// forgeLeader sends peer an empty AppendEntries of term, as a leader of that
// term would.
func forgeLeader(tr raft.Transport, peer cluster.Peer, term uint64) (*raft.AppendEntriesResponse, error) {
	var resp raft.AppendEntriesResponse
	err := tr.AppendEntries(raft.ServerID(peer.ID), raft.ServerAddress(peer.RaftAddr), &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("n9"), Addr: []byte("127.0.0.1:1")},
		Term:      term,
	}, &resp)
	return &resp, err
}

// The same forged request over plain TCP does reach Raft and moves the
// server to the forged term: the refusal above is the TLS layer's doing,
// not a property of the request.
func TestRaftOverTCPAcceptsAnyPeer(t *testing.T) {
	c := inproc.Start(t, 3, inproc.Options{TCP: true})
	l := c.Leader()
	target := (l + 1) % 3
	peer := c.Peer(target)
	before := c.Node(target).Status().Term
	tr, err := raft.NewTCPTransportWithLogger("127.0.0.1:0", nil, 1, 2*time.Second, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	if _, err := forgeLeader(tr, peer, before+100); err != nil {
		t.Fatalf("plain append request: %v", err)
	}
	harness.WaitUntil(t, 5*time.Second, "the plain request to move the term", func() bool {
		return c.Node(target).Status().Term > before
	})
}

// With TLS, a gossip member is admitted to Raft only when its Raft address
// proves the server role, and the id the member announces, in a
// handshake: announcing the cluster's name is not enough, nor is a
// server certificate of another id (what a relay to another server's Raft
// port presents).
func TestTLSProofOfAServer(t *testing.T) {
	p := newPKI(t)
	prove, err := cluster.TLSProof(p.server("n1", "prod"), "prod")
	if err != nil {
		t.Fatal(err)
	}
	listen := func(files certs.Files) string { return handshakeOnly(t, "127.0.0.1:0", files) }
	clientFiles := p.client("client-proof")
	silent, _ := net.Listen("tcp", "127.0.0.1:0")
	silent.Close()
	member := func(name, raftAddr string) cluster.Member {
		return cluster.Member{Name: "n2", Status: "alive", Meta: cluster.MemberMeta{Role: "server", ID: "n2", ClusterName: name, RaftAddr: raftAddr}}
	}
	n2 := listen(p.server("n2", "prod"))
	for _, tc := range []struct {
		name string
		m    cluster.Member
		ok   bool
	}{
		{"a server of the cluster", member("prod", n2), true},
		{"the right name, a server of the cluster that is another id (a relay)", member("prod", listen(p.server("n3", "prod"))), false},
		{"the right name, a client certificate", member("prod", listen(clientFiles)), false},
		{"the right name, a server of another cluster", member("prod", listen(p.server("n2", "staging"))), false},
		{"the right name, nothing at its Raft address", member("prod", silent.Addr().String()), false},
		{"another name", member("staging", n2), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := prove(tc.m)
			if (err == nil) != tc.ok {
				t.Fatalf("got %v, want ok=%v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, cluster.ErrNotProven) {
				t.Errorf("got %v, want an ErrNotProven", err)
			}
		})
	}
}
