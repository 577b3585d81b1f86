package integration

import (
	"bufio"
	"bytes"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/docs"
)

// docsMetrics is the reference of every metric, relative to this package.
var docsMetrics = filepath.Join("..", "..", "docs", "metrics.md")

// metricName is the form Prometheus recommends for a metric name.
var metricName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// documentedMetric is one row of the tables of docs/metrics.md.
type documentedMetric struct {
	typ string
	// shown says when a server exposes the family: "server" (every
	// server), "leader" (the leader of a cluster with followers),
	// "follower" (followers), or "event" (only once what it measures has
	// happened: a snapshot, a restore, a backup).
	shown string
}

// readDocumentedMetrics reads the rows of the tables of docs/metrics.md.
func readDocumentedMetrics(t *testing.T) map[string]documentedMetric {
	t.Helper()
	text, err := os.ReadFile(docsMetrics)
	if err != nil {
		t.Fatalf("read the metrics reference: %v", err)
	}
	rows, err := docs.MetricRows(text)
	if err != nil {
		t.Fatalf("docs/metrics.md: %v", err)
	}
	out := make(map[string]documentedMetric, len(rows))
	for _, r := range rows {
		out[r.Name] = documentedMetric{typ: r.Type, shown: r.Shown}
	}
	return out
}

// scrapeFamilies reads the families of a /metrics answer: name to type,
// from the # TYPE lines of the text format.
func scrapeFamilies(body []byte) map[string]string {
	out := make(map[string]string)
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			out[f[2]] = f[3]
		}
	}
	return out
}

// Every metric a server exposes has a well-formed Prometheus name (no
// camelCase, counters ending in _total, no server id or address in a
// name: peers are labels) and is documented in docs/metrics.md with its
// type; every documented metric that is always there is exposed by a
// real three-server cluster that has served some leases.
func TestMetricsFollowConventionsAndAreDocumented(t *testing.T) {
	c, l := startLedCluster(t, 3)
	// Some traffic: grants, renewals, a conflict, a release, a 404.
	for i := range 5 {
		key := fmt.Sprintf("metrics/%d", i)
		r := c.call(t, l, http.MethodPut, "/v1/leases/"+key, wire.AcquireBody{Holder: "worker-a", TTL: "30s"})
		if r.Status != http.StatusOK && r.Status != http.StatusCreated {
			t.Fatalf("acquire %s: status %d: %s", key, r.Status, r.Body)
		}
		var got lease
		r.decode(t, &got)
		if r := c.call(t, l, http.MethodPost, "/v1/renew/"+key, fmt.Sprintf(`{"holder":"worker-a","token":%d}`, got.Token)); r.Status != http.StatusOK {
			t.Fatalf("renew %s: status %d: %s", key, r.Status, r.Body)
		}
	}
	c.call(t, l, http.MethodPut, "/v1/leases/metrics/0", wire.AcquireBody{Holder: "worker-b", TTL: "30s"})
	c.call(t, l, http.MethodGet, "/no/such/route", nil)
	if r := c.call(t, l, http.MethodPut, "/v1/groups/metrics", map[string]any{"keys": []string{"metrics/0", "metrics/a", "metrics/b"}}); r.Status != http.StatusOK && r.Status != http.StatusCreated {
		t.Fatalf("define a group: status %d: %s", r.Status, r.Body)
	}
	for i := range c.nodes {
		c.call(t, i, http.MethodGet, "/v1/status", nil) // every server has answered a request
	}

	// Server ids and the port numbers of every address, as they would
	// appear in a name.
	var forbidden []string
	for _, nd := range c.nodes {
		forbidden = append(forbidden, nd.id)
		for _, a := range []string{nd.httpAddr, nd.raftAddr, nd.gossipAddr} {
			host, port, err := net.SplitHostPort(a)
			if err != nil {
				t.Fatalf("address %q: %v", a, err)
			}
			forbidden = append(forbidden, port, strings.NewReplacer(".", "_", ":", "_").Replace(host))
		}
	}

	docs := readDocumentedMetrics(t)
	// The leader's replication metrics appear with its first heartbeats
	// to the followers, the group's once a server has applied it: wait for
	// both before reading every server.
	poll.WaitFor(t, 10*time.Second, func() error {
		r, err := c.try(c.nodes[l].httpAddr, http.MethodGet, "/metrics", nil)
		if err != nil {
			return err
		}
		replicating := false
		for name := range scrapeFamilies(r.Body) {
			replicating = replicating || strings.HasPrefix(name, "tenure_raft_replication_")
		}
		if !replicating {
			return fmt.Errorf("no tenure_raft_replication_ metric on the leader %s yet", c.nodes[l].id)
		}
		for _, nd := range c.nodes {
			r, err := c.try(nd.httpAddr, http.MethodGet, "/metrics", nil)
			if err != nil {
				return err
			}
			if _, ok := scrapeFamilies(r.Body)["tenure_group_keys"]; !ok {
				return fmt.Errorf("%s has not applied the group yet", nd.id)
			}
		}
		return nil
	})
	exposed := make(map[string]string) // tenure_ family to its type, on any server
	on := make([]map[string]bool, len(c.nodes))
	for i, nd := range c.nodes {
		on[i] = make(map[string]bool)
		r := c.call(t, i, http.MethodGet, "/metrics", nil)
		if r.Status != http.StatusOK {
			t.Fatalf("/metrics on %s: status %d", nd.id, r.Status)
		}
		for name, typ := range scrapeFamilies(r.Body) {
			if strings.HasPrefix(name, "tenure_") {
				exposed[name] = typ
				on[i][name] = true
			}
		}
	}

	for _, name := range slices.Sorted(maps.Keys(exposed)) {
		typ := exposed[name]
		if !metricName.MatchString(name) {
			t.Errorf("%s: not a Prometheus name (want %s)", name, metricName)
		}
		if typ == "counter" && !strings.HasSuffix(name, "_total") {
			t.Errorf("%s: a counter whose name does not end in _total", name)
		}
		for _, seg := range strings.Split(name, "_") {
			if slices.Contains(forbidden, seg) {
				t.Errorf("%s: holds %q, a server id or part of an address (peers belong in a label)", name, seg)
			}
		}
		for _, f := range forbidden {
			if len(f) >= 4 && strings.Contains(name, f) {
				t.Errorf("%s: holds %q, a server id or part of an address", name, f)
			}
		}
		d, ok := docs[name]
		switch {
		case !ok:
			t.Errorf("%s (%s): exposed but not documented in docs/metrics.md", name, typ)
		case d.typ != typ:
			t.Errorf("%s: type %s in docs/metrics.md, %s on /metrics", name, d.typ, typ)
		}
	}
	for name, d := range docs {
		if !metricName.MatchString(name) {
			t.Errorf("docs/metrics.md: %s is not a Prometheus name", name)
		}
		switch d.shown {
		case "server":
			for i, nd := range c.nodes {
				if !on[i][name] {
					t.Errorf("%s: documented as shown on every server, but %s does not expose it", name, nd.id)
				}
			}
		case "follower":
			found := false
			for _, i := range c.followers(l) {
				found = found || on[i][name]
			}
			if !found {
				t.Errorf("%s: documented as shown on followers, but no follower exposes it", name)
			}
		case "leader":
			if !on[l][name] {
				t.Errorf("%s: documented as shown on the leader, but the leader (%s) does not expose it", name, c.nodes[l].id)
			}
		case "event":
		default:
			t.Errorf("docs/metrics.md: %s: shown is %q, want server, leader, follower or event", name, d.shown)
		}
	}
}
