package httpapi

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
	"github.com/tenure-io/tenure/test/harness/pki"
)

// testNode is one node of an in-process cluster (test/harness/inproc), as
// these tests address it.
type testNode struct {
	id   string
	url  string // http://host:port
	addr string // host:port, the node's HTTPAddr
	// inflight counts requests inside the handler; hits counts every
	// request the handler received.
	inflight *atomic.Int64
	hits     *atomic.Int64
}

// testCluster is a set of nodes bootstrapped together over TCP.
type testCluster struct {
	t       testing.TB
	cluster *inproc.Cluster
	nodes   []*testNode
}

// serveAPI is the API server of a node of an in-process cluster.
func serveAPI(node *cluster.Node, reg *prometheus.Registry, logger hclog.Logger) (http.Handler, error) {
	return New(testAPIConfig(node, reg, logger))
}

// testAPIConfig is the API configuration of a node of an in-process
// cluster: the server's defaults, its metrics and a log tail.
func testAPIConfig(node *cluster.Node, reg *prometheus.Registry, logger hclog.Logger) Config {
	api := DefaultConfig()
	api.Node = NodeOf(node)
	api.Gatherer = reg
	api.Registerer = reg
	api.Logger = logger
	api.LogTail, _ = NewLogTail(DefaultLogTailLines, DefaultLogTailBytes)
	return api
}

// startCluster starts n nodes named n1…nN and waits until one of them is an
// established leader and every other one knows its HTTP address.
func startCluster(t testing.TB, n int) *testCluster {
	t.Helper()
	return startClusterWith(t, n, inproc.Options{TCP: true, Serve: serveAPI})
}

// startClusterTLS is startCluster; with pki, every node serves the API
// over mutual TLS with its own server certificate and forwards over it.
func startClusterTLS(t *testing.T, n int, pki *testPKI) *testCluster {
	t.Helper()
	return startClusterWith(t, n, tlsOptions(t, pki))
}

// tlsOptions are the options of startClusterTLS.
func tlsOptions(t *testing.T, pki *testPKI) inproc.Options {
	t.Helper()
	opts := inproc.Options{TCP: true, Serve: serveAPI}
	if pki != nil {
		forward := map[string]*http.Client{}
		opts.FrontTLS = func(id string) *tls.Config {
			files := pki.server(t, id)
			sc, err := cluster.ServerTLSConfig(files)
			if err != nil {
				t.Fatal(err)
			}
			forward[id] = forwardClient(t, files)
			return sc
		}
		opts.Serve = func(node *cluster.Node, reg *prometheus.Registry, logger hclog.Logger) (http.Handler, error) {
			api := testAPIConfig(node, reg, logger)
			api.ForwardClient, api.ForwardScheme = forward[node.ID()], "https"
			return New(api)
		}
	}
	return opts
}

// forwardClient is the forwarding client of a server with the mutual TLS
// settings files (NewForwardClient).
func forwardClient(t *testing.T, files cluster.TLSFiles) *http.Client {
	t.Helper()
	cc, err := cluster.ClientTLSConfig(files)
	if err != nil {
		t.Fatal(err)
	}
	roots := cc.RootCAs
	hc := NewForwardClient(cc, func(id string) func(tls.ConnectionState) error {
		return cluster.VerifyServerIDConnection(roots, cluster.DefaultClusterName, id)
	})
	t.Cleanup(hc.CloseIdleConnections)
	return hc
}

// startClusterWith is startCluster with other options.
func startClusterWith(t testing.TB, n int, opts inproc.Options) *testCluster {
	t.Helper()
	c := &testCluster{t: t, cluster: inproc.Start(t, n, opts)}
	for i := 0; i < n; i++ {
		f := c.cluster.Front(i)
		c.nodes = append(c.nodes, &testNode{id: c.cluster.Peer(i).ID, url: f.URL, addr: f.Addr, inflight: &f.Inflight, hits: &f.Hits})
	}
	c.leader()
	return c
}

// testPKI is a CA in a temp dir that makes the files of servers and
// clients.
type testPKI struct {
	*pki.PKI
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	return &testPKI{pki.New(t)}
}

// server returns the mutual TLS settings of server id, made on the first
// call for id (its HTTP front and its Raft share them).
func (p *testPKI) server(t *testing.T, id string) cluster.TLSFiles {
	t.Helper()
	name := "server-" + id
	f := p.FilesOf(name)
	if _, err := os.Stat(f.CertFile); err == nil {
		return f
	}
	pair, err := p.CA.IssueServer(cluster.ServerCertOptions{NodeID: id})
	return p.Write(t, name, pair, err)
}

// client returns an HTTP client that presents a client certificate of the
// CA and trusts it.
func (p *testPKI) client(t *testing.T, name string) *http.Client {
	t.Helper()
	pair, err := p.CA.IssueClient(cluster.ClientCertOptions{Name: name})
	cfg, err := cluster.ClientTLSConfig(p.Write(t, "client-"+name, pair, err))
	if err != nil {
		t.Fatal(err)
	}
	tr := &http.Transport{TLSClientConfig: cfg}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// startACLCluster is startCluster with ACLs on (default policy deny), its
// Raft in memory: ACLs never run on a plain Raft port.
func startACLCluster(t *testing.T, n int) *testCluster {
	t.Helper()
	return startACLClusterWith(t, n, inproc.Options{Serve: serveAPI})
}

// startACLClusterWith is startClusterWith with ACLs on (opts.Tweak unset).
func startACLClusterWith(t *testing.T, n int, opts inproc.Options) *testCluster {
	t.Helper()
	opts.Tweak = func(cfg *cluster.Config) { cfg.ACLEnabled = true }
	return startClusterWith(t, n, opts)
}

// startNode starts a single-node cluster and waits until it leads.
func startNode(t testing.TB) *testNode {
	t.Helper()
	return startCluster(t, 1).nodes[0]
}

// leader waits until exactly one node is an established leader and every
// other node knows the leader's HTTP address, and returns the leader.
func (c *testCluster) leader() *testNode {
	c.t.Helper()
	return c.nodes[c.cluster.AgreedLeader()]
}

// follower returns a node other than the current leader.
func (c *testCluster) follower() (leader, follower *testNode) {
	c.t.Helper()
	leader = c.leader()
	for _, tn := range c.nodes {
		if tn != leader {
			return leader, tn
		}
	}
	c.t.Fatal("no follower in a one-node cluster")
	return nil, nil
}

// httpClient never follows redirects, so a test sees them.
var httpClient = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       30 * time.Second,
}

// reply is an answer as the test saw it.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// testSecret is the lease secret that send adds to the lease calls that
// name none, as the Go client adds its own: the tests act as one holder
// process. Tests of the secret itself use sendRaw.
const testSecret = "7e57c0de7e57c0de7e57c0de7e57c0de"

// send makes one request; it is safe to call from any goroutine. An
// acquire, renewal or release without a secret gets testSecret.
func send(method, url, body string, header http.Header) (reply, error) {
	url, body = harness.WithLeaseSecret(testSecret, method, url, body)
	return sendRaw(method, url, body, header)
}

// sendRaw is send without the secret added.
func sendRaw(method, url, body string, header http.Header) (reply, error) {
	r, err := harness.Send(httpClient, method, url, body, header)
	return reply{status: r.Status, header: r.Header, body: r.Body}, err
}

// do makes one request from the test goroutine.
func do(t *testing.T, method, url, body string) reply {
	t.Helper()
	r, err := send(method, url, body, nil)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

// doAs makes one request with the ACL token secret ("" for none).
func doAs(t *testing.T, secret, method, url, body string) reply {
	t.Helper()
	url, body = harness.WithLeaseSecret(testSecret, method, url, body)
	return rawAs(t, secret, method, url, body)
}

// rawAs makes one request with the ACL token secret acl and the body as
// given: no lease secret is added (send adds one).
func rawAs(t *testing.T, acl, method, url, body string) reply {
	t.Helper()
	h := http.Header{}
	if acl != "" {
		h.Set(client.HeaderToken, acl)
	}
	r, err := sendRaw(method, url, body, h)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	return r
}

// wantStatus fails the test unless r has the status want.
func (r reply) wantStatus(t *testing.T, what string, want int) {
	t.Helper()
	if r.status != want {
		t.Fatalf("%s: got status %d, want %d; body %s", what, r.status, want, r.body)
	}
}

// index is the X-Tenure-Index header as a number; it fails when absent.
func (r reply) index(t *testing.T) uint64 {
	t.Helper()
	v := r.header.Get("X-Tenure-Index")
	if v == "" {
		t.Fatalf("no X-Tenure-Index header; status %d, body %s", r.status, r.body)
	}
	var n uint64
	if _, err := fmt.Sscan(v, &n); err != nil {
		t.Fatalf("X-Tenure-Index %q: %v", v, err)
	}
	return n
}

// decode unmarshals the body into v, failing on anything that does not fit.
func (r reply) decode(t *testing.T, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(r.body)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("decode %T from %s: %v", v, r.body, err)
	}
}

func (r reply) lease(t *testing.T) client.LeaseInfo {
	t.Helper()
	var l client.LeaseInfo
	r.decode(t, &l)
	return l
}

func (r reply) apiErr(t *testing.T) wire.ErrorBody {
	t.Helper()
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("error answer has Content-Type %q, want application/json; body %s", ct, r.body)
	}
	var e wire.ErrorBody
	r.decode(t, &e)
	return e
}

// wantRefused fails the test unless r has the status and an error body
// with code, field and a message that contains msg ("" for any).
func (r reply) wantRefused(t *testing.T, what string, status int, code, field, msg string) {
	t.Helper()
	r.wantStatus(t, what, status)
	e := r.apiErr(t)
	if e.Error != code || e.Field != field || !strings.Contains(e.Message, msg) {
		t.Fatalf("%s: got code %q field %q message %q; want code %q field %q and a message with %q", what, e.Error, e.Field, e.Message, code, field, msg)
	}
}

// refusal is a request the API refuses, and the status, error code, field
// and a part of the message ("" for any) of its answer.
type refusal struct {
	name, method, path, body string
	status                   int
	code, field, msg         string
}

// checkRefusals makes each request of cases, its path after base, in a
// subtest of its name, and fails the subtest unless it is refused so.
func checkRefusals(t *testing.T, base string, cases []refusal) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			do(t, tc.method, base+tc.path, tc.body).wantRefused(t, tc.path, tc.status, tc.code, tc.field, tc.msg)
		})
	}
}

// acquire takes key for holder with a TTL long enough to outlive the test
// and returns the lease.
func acquire(t *testing.T, tn *testNode, key, holder string) client.LeaseInfo {
	t.Helper()
	r := do(t, http.MethodPut, tn.url+"/v1/leases/"+key, `{"holder":"`+holder+`","ttl":"30s"}`)
	r.wantStatus(t, "acquire "+key, http.StatusCreated)
	return r.lease(t)
}

// release frees key with the query form of DELETE.
func release(t *testing.T, tn *testNode, key, holder string, token uint64) {
	t.Helper()
	r := do(t, http.MethodDelete, fmt.Sprintf("%s/v1/leases/%s?holder=%s&token=%d", tn.url, key, holder, token), "")
	r.wantStatus(t, "release "+key, http.StatusNoContent)
}

// released acquires key for holder and releases it again, and returns the
// lease as it was acquired.
func released(t *testing.T, tn *testNode, key, holder string) client.LeaseInfo {
	t.Helper()
	l := acquire(t, tn, key, holder)
	release(t, tn, key, holder, l.Token)
	return l
}

// answer is the outcome of a request made in the background.
type answer struct {
	reply
	err error
}

// sendAsync starts a request in the background; its answer arrives on the
// returned channel. The test must receive it before it ends.
func sendAsync(method, url string) <-chan answer {
	ch := make(chan answer, 1)
	go func() {
		r, err := send(method, url, "", nil)
		ch <- answer{reply: r, err: err}
	}()
	return ch
}

// quiet fails the test if ch delivers within d: the request it stands for
// must still be waiting.
func quiet(t *testing.T, ch <-chan answer, d time.Duration, while string) {
	t.Helper()
	select {
	case a := <-ch:
		t.Fatalf("blocking request answered %s: status %d, err %v, body %s", while, a.status, a.err, a.body)
	case <-time.After(d):
	}
}

// receive waits for the answer of a background request.
func receive(t *testing.T, ch <-chan answer, within time.Duration) reply {
	t.Helper()
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatalf("blocking request: %v", a.err)
		}
		return a.reply
	case <-time.After(within):
		t.Fatalf("blocking request did not answer within %v", within)
	}
	return reply{}
}

// blockedGet starts a GET of url in the background, waits until tn holds
// it and it has gone 200ms unanswered (while says when, for the failure),
// then runs change and returns the answer, which must come within 5s.
func blockedGet(t *testing.T, tn *testNode, url, while string, change func()) reply {
	t.Helper()
	ch := sendAsync(http.MethodGet, url)
	waitBlocked(t, tn, 1)
	quiet(t, ch, 200*time.Millisecond, while)
	change()
	return receive(t, ch, 5*time.Second)
}

// waitBlocked polls until tn has n requests in its handler.
func waitBlocked(t *testing.T, tn *testNode, n int64) {
	t.Helper()
	harness.WaitUntil(t, 5*time.Second, fmt.Sprintf("%d request(s) in flight on %s", n, tn.id), func() bool {
		return tn.inflight.Load() == n
	})
}
