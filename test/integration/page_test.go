package integration

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/worker"
	"github.com/tenure-io/tenure/test/harness"
)

// pageCluster is the cluster of TestPage: three servers with TLS on the
// API and Raft and ACLs on (default deny), bootstrapped; c.token is the
// bootstrap (management) token's secret. The browser has no client
// certificate, so the API does not ask for one.
type pageCluster struct {
	*cluster
	tls client.TLSConfig
}

// startPageCluster starts the servers, bootstraps the ACL system and waits
// for an established leader; every process is killed when t ends.
func startPageCluster(t *testing.T) *pageCluster {
	t.Helper()
	p := newTestPKI(t)
	c := &pageCluster{cluster: newCluster(t), tls: client.TLSConfig{CAFile: p.caFile()}}
	c.scheme = "https"
	c.http = httpClient(t, p, "", "")
	c.nodeArgs = p.serverOnlyArgs("-acl-enabled")
	c.start(t, 3)
	c.token = bootstrapACL(t, tlsClient(t, "admin", c.tls, c.httpAddrs()...), startTimeout).SecretID
	c.leader(t)
	return c
}

// client is a Go client of the cluster over https as holder, with token
// (the bootstrap token when empty).
func (c *pageCluster) client(t *testing.T, holder, token string) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.Addresses = c.httpAddrs()
	cfg.Holder = holder
	cfg.Timeout = 5 * time.Second
	cfg.RetryMax = 2
	cfg.TLS = c.tls
	cfg.Token = token
	if token == "" {
		cfg.Token = c.token
	}
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	return cl
}

// awaitRight waits until server i, from its own copy of the ACL state,
// answers that token has right on key as want: the page asks the server
// it was loaded from, and a follower learns of a new token or policy one
// commit round after the leader.
func (c *pageCluster) awaitRight(t *testing.T, i int, token, right, key string, want bool) {
	t.Helper()
	cl := c.nodeClient(t, i, token)
	deadline := time.Now().Add(10 * time.Second)
	for {
		res, err := cl.ACL().Authorize(context.Background(), []client.ACLCheck{client.CheckKey(right, key)})
		if err == nil && len(res) == 1 && res[0].Allowed == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("server %s: %s on %s for the token: %+v, %v; want allowed=%v", c.nodes[i].id, right, key, res, err, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// nodeClient is a Go client of server i alone, with token.
func (c *pageCluster) nodeClient(t *testing.T, i int, token string) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{c.nodes[i].httpAddr}
	cfg.Timeout, cfg.RetryMax, cfg.TLS, cfg.Token = 5*time.Second, 2, c.tls, token
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	return cl
}

// url is the https URL of path on node i.
func (c *pageCluster) url(i int, path string) string {
	return "https://" + c.nodes[i].httpAddr + path
}

// TestPage drives the page in headless Chromium against three servers
// with TLS and ACLs on, the bootstrap token typed into its token field:
// it loads and shows the cluster; a lease acquired through the Go client
// appears without a reload, its time left counts down in the browser, the
// filters narrow the list, and it shows free once released; a revoke from
// the page (its confirm dialog accepted) frees the key; a group's keys
// move off a worker drained from the page, with unowned and disabled keys
// marked and each worker's load and key count shown; a group of 1,500 keys
// is counted and listed whole, in the order people count; a worker that never
// takes its keys shows stuck, and one killed shows dead and stays listed; with a voter killed it says that one more
// failure stops writes and which server is not healthy; with no quorum the
// page says so and shows leases greyed as last known.
func TestPage(t *testing.T) {
	needChromium(t)
	c := startPageCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	lead := c.leader(t)
	// The page is opened on a follower: what it reads is forwarded to the
	// leader, and it survives the leader's loss for the last subtest.
	pageNode := (lead + 1) % 3
	b := newBrowser(t)
	b.open(c.url(pageNode, "/ui"), c.token)

	t.Run("loads", func(t *testing.T) {
		b.t = t
		b.waitTrue(10*time.Second, "the cluster view lists three servers and a leader",
			`document.querySelectorAll('#servers tbody tr').length === 3 && document.querySelector('#servers .badge.ok')`)
		b.waitTrue(10*time.Second, "the gossip members are listed", `document.querySelectorAll('#members tbody tr').length >= 3`)
		if banner, err := eval[bool](b, `document.getElementById('no-leader').hidden`); err != nil || !banner {
			t.Errorf("the no-leader banner shows with a leader (hidden=%v, %v)", banner, err)
		}
		// The cards say what the page's server says of itself.
		st, _, err := c.nodeClient(t, pageNode, c.token).Status(ctx)
		if err != nil {
			t.Fatal(err)
		}
		cards, err := eval[map[string]string](b, `Object.fromEntries([...document.querySelectorAll('#status-cards .card')].map(c => [c.querySelector('.label').textContent, c.querySelector('.value').textContent]))`)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"this server": st.NodeID, "role": st.Role, "leader": st.LeaderID, "term": strconv.FormatUint(st.Term, 10)}
		for label, v := range want {
			if cards[label] != v {
				t.Errorf("the cluster view's %q card reads %q, want %q (GET /v1/status); cards: %v", label, cards[label], v, cards)
			}
		}
		for _, label := range []string{"commit index", "applied index", "last contact", "as of"} {
			if cards[label] == "" {
				t.Errorf("the cluster view has no %q card, or it is empty: %v", label, cards)
			}
		}
		b.screenshot("cluster")
	})

	app := c.client(t, "tracker-1", "")
	if _, _, err := app.Status(ctx); err != nil {
		t.Fatal(err)
	}
	t.Run("lease appears live and goes on release", func(t *testing.T) {
		b.t = t
		b.view("leases")
		b.waitTrue(10*time.Second, "the leases view has read the list", `document.querySelector('#leases td.empty')`)
		// Each acquire is timed from the call until its row shows held;
		// the median of four must be within a second (one slow answer on
		// a busy machine does not fail the test; a page that does not
		// follow the list fails every one).
		var took []time.Duration
		acquire := func(cl *client.Client, key string, opts ...client.LeaseOption) *client.Lease {
			t.Helper()
			start := time.Now()
			l, err := cl.Acquire(ctx, key, opts...)
			if err != nil {
				t.Fatalf("Acquire %s: %v", key, err)
			}
			b.waitTrue(5*time.Second, key+" shows held", leaseRow(key)+`?.dataset.state === 'held'`)
			took = append(took, time.Since(start))
			return l
		}
		lease := acquire(app, "scenes/042", client.WithTTL(10*time.Second), client.WithMetadata(map[string]string{"camera": "north"}))
		text, _ := eval[string](b, leaseRow("scenes/042")+`.innerText`)
		for _, want := range []string{"tracker-1", "camera=north", "10s"} {
			if !strings.Contains(text, want) {
				t.Errorf("the row of scenes/042 reads %q, want %q in it", text, want)
			}
		}
		var extra []*client.Lease
		for i, k := range []string{"scenes/007", "scenes/113", "jobs/nightly-report"} {
			cl := c.client(t, fmt.Sprintf("tracker-%d", i+2), "")
			if _, _, err := cl.Status(ctx); err != nil { // connected before the clock starts
				t.Fatal(err)
			}
			extra = append(extra, acquire(cl, k, client.WithTTL(time.Duration(15+10*i)*time.Second)))
		}
		slices.Sort(took)
		median := took[len(took)/2]
		t.Logf("from acquire to the row shown held: %v (median %v)", took, median)
		if median > time.Second {
			t.Errorf("leases showed a median %v after their acquire (%v), want within a second", median, took)
		}
		b.screenshot("leases")

		// The filters narrow the list (by the API's own prefix, holder
		// and state), and cleared they bring every lease back.
		setField := func(id, value, event string) {
			t.Helper()
			if _, err := eval[bool](b, fmt.Sprintf(`(() => { const e = document.getElementById(%q); e.value = %q; e.dispatchEvent(new Event(%q)); return true })()`, id, value, event)); err != nil {
				t.Fatalf("set %s: %v", id, err)
			}
		}
		rows := `[...document.querySelectorAll('#leases tbody tr[data-key]')].map(r => r.dataset.key).sort().join(',')`
		setField("lease-prefix", "scenes/", "input")
		b.waitTrue(5*time.Second, "the prefix scenes/ shows the three scenes only", rows+` === 'scenes/007,scenes/042,scenes/113'`)
		setField("lease-holder", "tracker-3", "input")
		b.waitTrue(5*time.Second, "the holder tracker-3 shows its one lease", rows+` === 'scenes/113'`)
		setField("lease-prefix", "", "input")
		setField("lease-holder", "", "input")
		b.waitTrue(5*time.Second, "cleared filters show every lease again", rows+` === 'jobs/nightly-report,scenes/007,scenes/042,scenes/113'`)

		// With one lease free, the state filter shows the held or the
		// free ones only.
		if err := extra[2].Release(ctx); err != nil {
			t.Fatalf("Release jobs/nightly-report: %v", err)
		}
		b.waitTrue(5*time.Second, "jobs/nightly-report shows free", leaseRow("jobs/nightly-report")+`?.dataset.state === 'free'`)
		setField("lease-state", "held", "change")
		b.waitTrue(5*time.Second, "the state held shows the three held leases only", rows+` === 'scenes/007,scenes/042,scenes/113'`)
		setField("lease-state", "free", "change")
		b.waitTrue(5*time.Second, "the state free shows the released lease only", rows+` === 'jobs/nightly-report'`)
		setField("lease-state", "", "change")
		b.waitTrue(5*time.Second, "any state shows every lease again", rows+` === 'jobs/nightly-report,scenes/007,scenes/042,scenes/113'`)
		for _, l := range extra[:2] {
			l.Release(ctx)
		}
		start := time.Now()
		if err := lease.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		b.waitTrue(5*time.Second, "scenes/042 shows free", leaseRow("scenes/042")+`?.dataset.state === 'free'`)
		t.Logf("from release to the row shown free: %v", time.Since(start).Round(time.Millisecond))

		// The time left on a lease whose holder renews it stays that of
		// the leader, over three TTLs.
		renewed := acquire(app, "scenes/renewed", client.WithTTL(5*time.Second))
		expiresFollowsTheLeader(t, b, app, "scenes/renewed", 5*time.Second)
		if err := renewed.Release(ctx); err != nil {
			t.Fatalf("Release scenes/renewed: %v", err)
		}
	})

	t.Run("revoke from the page", func(t *testing.T) {
		b.t = t
		b.view("leases")
		lease, err := app.Acquire(ctx, "scenes/099", client.WithTTL(2*time.Second))
		if err != nil {
			t.Fatalf("Acquire: %v", err)
		}
		b.waitTrue(5*time.Second, "scenes/099 shows held with a revoke button", leaseRow("scenes/099")+`?.querySelector('button.revoke')`)
		b.click(`#leases tr[data-key="scenes/099"] button.revoke`)
		select {
		case <-lease.Context().Done():
		case <-time.After(10 * time.Second):
			t.Fatal("the holder still holds scenes/099 10s after the revoke from the page")
		}
		// The key frees (at the lease's deadline, as a safe revoke does).
		poll.WaitFor(t, 10*time.Second, func() error {
			l, _, err := app.Leases().Get(ctx, "scenes/099", nil)
			if err != nil {
				return err
			}
			if l.State != client.StateFree || l.Reason != client.ReasonRevoked {
				return fmt.Errorf("scenes/099 is %s (%s), want free, revoked", l.State, l.Reason)
			}
			return nil
		})
		b.waitTrue(5*time.Second, "scenes/099 shows free", leaseRow("scenes/099")+`?.dataset.state === 'free'`)
	})

	t.Run("keys move off a drained worker", func(t *testing.T) {
		b.t = t
		admin := c.client(t, "admin", "")
		if _, err := admin.Groups().Put(ctx, "partitions", client.GroupSpec{Prefix: "partitions/", Count: 6}); err != nil {
			t.Fatal(err)
		}
		// Before any worker runs, every key shows unowned, marked.
		b.view("groups")
		owned := `[...document.querySelectorAll('#group-keys tbody tr')]`
		b.waitTrue(10*time.Second, "with no worker yet, the six keys of partitions show unowned and marked",
			owned+`.length === 6 && `+owned+`.every(r => r.classList.contains('alert') && r.textContent.includes('unowned'))`)
		var joins []string
		for _, nd := range c.nodes {
			joins = append(joins, nd.gossipAddr)
		}
		runs := map[string]*workerRun{}
		for _, id := range []string{"worker-a", "worker-b"} {
			// Each holds the keys it is given until they are taken from it.
			runs[id] = runWorker(t, ctx, c.client(t, id, ""), "partitions", worker.WithWorkerID(id), worker.WithWorkerTTL(2*time.Second),
				worker.WithCapacity(8), worker.WithLoadCapacity(100), worker.WithGossipAddr("127.0.0.1:0"), worker.WithJoin(joins...),
				worker.WithWorkerLogger(hclog.NewNullLogger()))
		}
		b.waitTrue(30*time.Second, "every key of partitions is owned, by both workers",
			owned+`.length === 6 && `+owned+`.every(r => r.dataset.owner) && `+owned+`.some(r => r.dataset.owner === 'worker-a') && `+owned+`.some(r => r.dataset.owner === 'worker-b')`)
		b.screenshot("groups")
		b.click(`#group-workers tr[data-worker="worker-a"] button.drain`)
		took := b.waitTrue(30*time.Second, "every key of partitions is owned by worker-b",
			owned+`.length === 6 && `+owned+`.every(r => r.dataset.owner === 'worker-b')`)
		t.Logf("from the drain to every key shown on worker-b: %v", took.Round(time.Millisecond))
		// Disable a key from the page: worker-b hands it back and nobody
		// takes it.
		b.click(`#group-keys tr[data-key="partitions/0"] button.disable`)
		b.waitTrue(10*time.Second, "partitions/0 shows disabled and unowned",
			`document.querySelector('#group-keys tr[data-key="partitions/0"]')?.innerText.includes('disabled') && document.querySelector('#group-keys tr[data-key="partitions/0"]').dataset.owner === ''`)
		if ctl, err := admin.Groups().Control(ctx, "partitions/0"); err != nil || !ctl.Disabled {
			t.Errorf("controls of partitions/0 after Disable on the page: %+v, %v; want disabled", ctl, err)
		}
		// The disabled key is greyed, not marked as an unowned one.
		b.waitTrue(5*time.Second, "partitions/0 shows greyed and no key shows marked",
			`document.querySelector('#group-keys tr[data-key="partitions/0"]').classList.contains('muted') && !document.querySelector('#group-keys tr.alert')`)
		// Each worker's load against its capacity of 8: worker-b holds
		// and is the target of the five enabled keys, worker-a of none.
		b.waitTrue(10*time.Second, "worker-b's load reads 5 / 5 (max 8) with its bar at 63%, worker-a's 0 / 0 (max 8) at 0%",
			groupLoad("worker-b")+` === '5 / 5 (max 8) 63%' && `+groupLoad("worker-a")+` === '0 / 0 (max 8) 0%'`)
		// Loads that worker-b reports show per key and, summed, against
		// its load capacity.
		for _, key := range []string{"partitions/1", "partitions/2"} {
			if err := runs["worker-b"].w.ReportLoad(key, 12.5); err != nil {
				t.Fatal(err)
			}
		}
		// Loads never move the group's index: the page reads a group with
		// loads again every ten seconds.
		b.waitTrue(25*time.Second, "partitions/1 shows a load of 12.5 and worker-b 25 / 100",
			`document.querySelector('#group-keys tr[data-key="partitions/1"] td.work')?.textContent === '12.5' && `+
				`document.querySelector('#group-workers tr[data-worker="worker-b"] td.work')?.textContent === '25 / 100'`)
		b.view("workers")
		b.waitTrue(10*time.Second, "the workers view shows worker-a alive and drained with no key, worker-b alive with the five enabled keys",
			workerCell("worker-a", "status")+` === 'alive drained' && `+workerCell("worker-a", "holds")+` === '0 / 0' && `+workerKeys("worker-a")+` === '' && `+
				workerCell("worker-b", "status")+` === 'alive' && `+workerCell("worker-b", "holds")+` === '5 / 5' && `+
				workerKeys("worker-b")+` === 'partitions/1,partitions/2,partitions/3,partitions/4,partitions/5'`)
		// Each worker's name stays on one line, however narrow the window.
		if _, err := eval[bool](b, `(() => { document.body.style.width = '420px'; return true })()`); err != nil {
			t.Fatal(err)
		}
		if lines, err := eval[int](b, `Math.max(...[...document.querySelectorAll('#workers tbody tr[data-worker] td:first-child')].map(c => { const r = document.createRange(); r.selectNodeContents(c); return r.getClientRects().length }))`); err != nil || lines != 1 {
			t.Errorf("a worker's name in the workers view takes %d lines (%v), want 1", lines, err)
		}
		eval[bool](b, `(() => { document.body.style.width = ''; return true })()`)
		b.screenshot("workers")
	})

	t.Run("a group larger than a page", func(t *testing.T) {
		b.t = t
		keys := make([]string, 1500)
		for i := range keys {
			keys[i] = fmt.Sprintf("partitions/%d", i)
		}
		admin := c.client(t, "admin", "")
		if _, err := admin.Groups().Put(ctx, "big", client.GroupSpec{Keys: keys}); err != nil {
			t.Fatal(err)
		}
		defer admin.Groups().Delete(ctx, "big")
		b.view("groups")
		if _, err := eval[bool](b, `(() => { document.getElementById('group-name').value = 'big'; document.getElementById('group-filters').requestSubmit(); return true })()`); err != nil {
			t.Fatal(err)
		}
		// Every key counted and shown (the API answers 1000 a page), in
		// the order people count.
		b.waitTrue(10*time.Second, "the group big shows 1500 keys, partitions/0, 1, 2 first and partitions/1499 last",
			`document.getElementById('group-note').textContent.startsWith('1500 keys ·') && (() => { const k = [...document.querySelectorAll('#group-keys tbody tr[data-key]')].map(r => r.dataset.key); `+
				`return k.length === 1500 && k[0] === 'partitions/0' && k[1] === 'partitions/1' && k[2] === 'partitions/2' && k[10] === 'partitions/10' && k[1499] === 'partitions/1499' })()`)
	})

	t.Run("a stuck worker is marked", func(t *testing.T) {
		b.t = t
		admin := c.client(t, "admin", "")
		if _, err := admin.Groups().Put(ctx, "stalled", client.GroupSpec{Prefix: "stalled/", Count: 2, StuckGrace: "1s"}); err != nil {
			t.Fatal(err)
		}
		if err := admin.Groups().RegisterWorker(ctx, "worker-cut", []string{"stalled"}); err != nil {
			t.Fatal(err)
		}
		runCutWorker(t, ctx, "stalled", "worker-cut", c)
		b.view("groups")
		b.click(`#groups tr[data-group="stalled"] a`)
		b.waitTrue(30*time.Second, "worker-cut shows stuck and marked in the group stalled",
			`document.querySelector('#group-workers tr[data-worker="worker-cut"]')?.classList.contains('alert') && `+
				`document.querySelector('#group-workers tr[data-worker="worker-cut"] td.status').textContent === 'alive stuck' && `+
				`document.getElementById('group-note').textContent.includes('stuck: worker-cut')`)
	})

	t.Run("a killed worker shows dead and stays listed", func(t *testing.T) {
		b.t = t
		admin := c.client(t, "admin", "")
		if _, err := admin.Groups().Put(ctx, "doomed", client.GroupSpec{Prefix: "doomed/", Count: 2}); err != nil {
			t.Fatal(err)
		}
		// worker-idle is drained before it starts: it holds nothing, so
		// its death changes no plan and no lease, only gossip.
		for _, id := range []string{"worker-doomed", "worker-idle"} {
			if err := admin.Groups().RegisterWorker(ctx, id, []string{"doomed"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := admin.Groups().DrainWorker(ctx, "worker-idle", true); err != nil {
			t.Fatal(err)
		}
		env := []string{client.EnvCACert + "=" + c.tls.CAFile, client.EnvHTTPToken + "=" + c.token}
		doomed := startDemoWorkerEnv(t, c.cluster, "doomed", "worker-doomed", 2*time.Second, env)
		idle := startDemoWorkerEnv(t, c.cluster, "doomed", "worker-idle", 2*time.Second, env)
		b.view("workers")
		b.waitTrue(30*time.Second, "the workers view shows worker-doomed alive with both keys of doomed, worker-idle alive and drained with none",
			workerCell("worker-doomed", "status")+` === 'alive' && `+workerKeys("worker-doomed")+` === 'doomed/0,doomed/1' && `+
				workerCell("worker-idle", "status")+` === 'alive drained' && `+workerKeys("worker-idle")+` === ''`)
		idle.kill()
		took := b.waitTrue(40*time.Second, "after its SIGKILL, worker-idle shows dead, with no reload",
			workerCell("worker-idle", "status")+` === 'dead drained'`)
		t.Logf("from the SIGKILL of a worker holding nothing to the page showing it dead: %v", took.Round(time.Millisecond))
		doomed.kill()
		took = b.waitTrue(40*time.Second, "after its SIGKILL, worker-doomed shows dead, holding nothing",
			workerCell("worker-doomed", "status")+` === 'dead' && `+workerKeys("worker-doomed")+` === ''`)
		t.Logf("from the SIGKILL of a worker holding two keys to the page showing it dead: %v", took.Round(time.Millisecond))
		// Still there when the view is read afresh: a dead worker is listed
		// until the servers forget it (10 minutes), not dropped.
		b.view("leases")
		b.view("workers")
		b.waitTrue(10*time.Second, "after switching views, both killed workers are still listed as dead",
			workerCell("worker-doomed", "status")+` === 'dead' && `+workerCell("worker-idle", "status")+` === 'dead drained'`)
	})

	t.Run("events", func(t *testing.T) {
		b.t = t
		b.view("events")
		b.waitTrue(5*time.Second, "the events view shows the revoke and the drain",
			`document.querySelector('#events tr.ev-revoked') && document.querySelector('#events tr.ev-drained')`)
		b.screenshot("events")
		// The type filter asks the API for drains only.
		if _, err := eval[bool](b, `(() => { const e = document.getElementById('event-type'); e.value = 'drained'; e.dispatchEvent(new Event('change')); return true })()`); err != nil {
			t.Fatal(err)
		}
		b.waitTrue(5*time.Second, "the type filter shows drains only",
			`document.querySelector('#events tr.ev-drained') && !document.querySelector('#events tbody tr:not(.ev-drained)')`)
		if _, err := eval[bool](b, `(() => { const e = document.getElementById('event-type'); e.value = ''; e.dispatchEvent(new Event('change')); return true })()`); err != nil {
			t.Fatal(err)
		}
		b.waitTrue(5*time.Second, "every type again", `document.querySelector('#events tr.ev-revoked')`)
		l, err := app.Acquire(ctx, "scenes/live", client.WithTTL(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(ctx)
		b.waitTrue(5*time.Second, "the new acquire arrives in the feed", `[...document.querySelectorAll('#events tr.ev-acquired')].some(r => r.innerText.includes('scenes/live'))`)
		// It shows when the leader committed it, in UTC.
		when, err := eval[string](b, `[...document.querySelectorAll('#events tr.ev-acquired')].find(r => r.innerText.includes('scenes/live')).children[1].textContent`)
		if err != nil {
			t.Fatal(err)
		}
		if at, err := time.Parse("2006-01-02 15:04:05Z", when); err != nil || time.Since(at).Abs() > time.Minute {
			t.Errorf("the acquire of scenes/live shows the time %q (%v), want the leader's time of its commit, a moment ago", when, err)
		}
	})

	t.Run("a token that may not revoke", func(t *testing.T) {
		b.t = t
		admin := c.client(t, "admin", "")
		viewer := policyToken(t, ctx, admin, "viewer", "", []client.ACLRule{{Prefix: "", Rights: []string{client.RightRead}}})
		lease, err := app.Acquire(ctx, "scenes/guarded", client.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer lease.Release(ctx)

		// A read-only token is never offered the revoke: the page asks
		// the cluster what the token may do before it draws a button.
		c.awaitRight(t, pageNode, viewer.SecretID, client.RightRead, "scenes/guarded", true)
		b.open(c.url(pageNode, "/ui#leases"), viewer.SecretID)
		b.waitTrue(10*time.Second, "scenes/guarded shows held", leaseRow("scenes/guarded")+`?.dataset.state === 'held'`)
		b.waitTrue(5*time.Second, "the page knows the token may not revoke it", leaseRow("scenes/guarded")+`?.dataset.revoke === 'denied'`)
		if shown, _ := eval[bool](b, `!!document.querySelector('#leases button.revoke')`); shown {
			t.Error("a Revoke button is shown to a token with read only")
		}
		if note, _ := eval[string](b, `document.getElementById('lease-note').textContent`); !strings.Contains(note, "may not revoke") {
			t.Errorf("the leases view's note is %q, want it to say the token may not revoke", note)
		}

		// A token that may revoke there sees the button; when its right
		// goes after the page asked, the API's refusal still hides it.
		if _, err := admin.ACL().SetPolicy(ctx, "revoker", client.ACLPolicySpec{Rules: []client.ACLRule{{Prefix: "scenes/", Rights: []string{client.RightRevoke}}}}); err != nil {
			t.Fatal(err)
		}
		revoker, err := admin.ACL().CreateToken(ctx, client.ACLTokenSpec{Policies: []string{"viewer", "revoker"}})
		if err != nil {
			t.Fatal(err)
		}
		c.awaitRight(t, pageNode, revoker.SecretID, client.RightRevoke, "scenes/guarded", true)
		b.open(c.url(pageNode, "/ui#leases"), revoker.SecretID)
		b.waitTrue(10*time.Second, "the revoker is offered the revoke", leaseRow("scenes/guarded")+`?.dataset.revoke === 'allowed' && `+leaseRow("scenes/guarded")+`.querySelector('button.revoke')`)
		if err := admin.ACL().DeletePolicy(ctx, "revoker"); err != nil {
			t.Fatal(err)
		}
		b.click(`#leases tr[data-key="scenes/guarded"] button.revoke`)
		b.waitTrue(5*time.Second, "the refusal shows and the revoke button goes",
			`!document.getElementById('problem').hidden && document.getElementById('problem').innerText.includes('permission_denied') && `+leaseRow("scenes/guarded")+`?.dataset.revoke === 'denied' && !document.querySelector('#leases button.revoke')`)
		if l, _, err := app.Leases().Get(ctx, "scenes/guarded", nil); err != nil || l.State != client.StateHeld || l.Ending != "" {
			t.Errorf("scenes/guarded after a refused revoke: %+v, %v; want held", l, err)
		}
		b.open(c.url(pageNode, "/ui#leases"), c.token) // back to the management token
		b.waitTrue(5*time.Second, "the revoke buttons are back", leaseRow("scenes/guarded")+`?.querySelector('button.revoke')`)
	})

	t.Run("a token that may read only some keys of a group", func(t *testing.T) {
		b.t = t
		admin := c.client(t, "admin", "")
		if _, err := admin.Groups().Put(ctx, "mixed", client.GroupSpec{Keys: []string{"scenes/m1", "other/m2", "other/m3"}}); err != nil {
			t.Fatal(err)
		}
		hidden, err := c.client(t, "hidden-holder", "").Acquire(ctx, "other/m2", client.WithTTL(30*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer hidden.Release(ctx)
		narrow := policyToken(t, ctx, admin, "mixed-scenes", "", []client.ACLRule{
			{Prefix: "mixed", Rights: []string{client.RightRead}}, {Prefix: "scenes/", Rights: []string{client.RightRead}}})
		c.awaitRight(t, pageNode, narrow.SecretID, client.RightRead, "scenes/m1", true)
		// The token may not list every group: the page says so, and opens
		// the group by its name.
		b.open(c.url(pageNode, "/ui#groups"), narrow.SecretID)
		b.waitTrue(10*time.Second, "the page says the token may not list every group",
			`!document.getElementById('problem').hidden && document.getElementById('problem').innerText.includes('may not list every group')`)
		if _, err := eval[bool](b, `(() => { document.getElementById('group-name').value = 'mixed'; document.getElementById('group-filters').requestSubmit(); return true })()`); err != nil {
			t.Fatal(err)
		}
		keys := `[...document.querySelectorAll('#group-keys tbody tr[data-key]')].map(r => r.dataset.key).join(',')`
		b.waitTrue(10*time.Second, "the group mixed shows scenes/m1 only, and says two keys are hidden",
			`!document.getElementById('group-detail').hidden && `+keys+` === 'scenes/m1' && document.getElementById('group-note').textContent.includes('2 more hidden')`)
		if text, _ := eval[string](b, `document.getElementById('view-groups').innerText`); strings.Contains(text, "other/") || strings.Contains(text, "hidden-holder") {
			t.Errorf("the groups view shows a key or holder the token may not read: %q", text)
		}
		b.open(c.url(pageNode, "/ui#leases"), c.token) // back to the management token
		b.waitTrue(5*time.Second, "the leases view lists the leases again", leaseRow("scenes/guarded"))
	})

	// Nothing changes from here until the next subtest.
	t.Run("an idle page sends nothing", func(t *testing.T) {
		b.t = t
		pageIsIdle(t, b)
	})

	t.Run("a voter down", func(t *testing.T) {
		b.t = t
		b.view("cluster")
		if ok, _ := eval[bool](b, `document.getElementById('no-tolerance').hidden`); !ok {
			t.Errorf("the no-tolerance banner shows with every voter up")
		}
		lead := c.leader(t)
		down := 3 - lead - pageNode // neither the leader nor the page's server
		c.kill(t, down)
		id := c.nodes[down].id
		b.waitTrue(20*time.Second, "the page's server, a follower, shows that one more failure stops writes and that "+id+" is not healthy",
			`!document.getElementById('no-tolerance').hidden && document.getElementById('no-tolerance-text').textContent.includes('not healthy: `+id+`') && `+
				fmt.Sprintf(`document.querySelector('#servers tr[data-id=%q]')?.dataset.healthy === 'false'`, id))
		b.screenshot("no-tolerance")
	})

	t.Run("no leader", func(t *testing.T) {
		b.t = t
		if _, err := c.client(t, "tracker-9", "").Acquire(ctx, "scenes/kept", client.WithTTL(30*time.Second)); err != nil {
			t.Fatal(err)
		}
		b.view("leases")
		b.waitTrue(5*time.Second, "scenes/kept shows held", leaseRow("scenes/kept")+`?.dataset.state === 'held'`)
		// The page read that from the leader; what it shows once the
		// leader is gone is its own server's copy, which may trail by a
		// commit round: wait until that copy has the lease too.
		own := c.nodeClient(t, pageNode, c.token)
		poll.WaitFor(t, 5*time.Second, func() error {
			l, _, err := own.Leases().Get(ctx, "scenes/kept", &client.QueryOptions{Stale: true})
			if err == nil && l.State != client.StateHeld {
				err = fmt.Errorf("%s's own copy of scenes/kept: %s", c.nodes[pageNode].id, l.State)
			}
			return err
		})
		lead := c.leader(t)
		if lead == pageNode {
			t.Fatalf("the page's server %s leads: want a follower", c.nodes[pageNode].id)
		}
		for i := range c.nodes {
			if i != pageNode {
				c.kill(t, i)
			}
		}
		b.waitTrue(20*time.Second, "the no-leader banner shows", `!document.getElementById('no-leader').hidden`)
		b.waitTrue(10*time.Second, "scenes/kept shows as last known, not held",
			leaseRow("scenes/kept")+`?.dataset.state === 'unknown' && !document.querySelector('#leases .badge.ok')`)
		if problem, _ := eval[string](b, `document.getElementById('problem').hidden ? '' : document.getElementById('problem').innerText`); problem != "" {
			t.Logf("the page reports: %s", problem)
		}
		b.screenshot("no-leader")
	})
}

// runCutWorker runs worker id of group, its gossip joined to the
// servers of c but its API requests sent to a port nobody listens on: the
// balancer sees it alive (once registered for group) and targets keys at
// it, which it never takes.
func runCutWorker(t *testing.T, ctx context.Context, group, id string, c *pageCluster) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	cfg := client.DefaultConfig()
	cfg.Addresses, cfg.Timeout = []string{closed}, time.Second
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	var joins []string
	for _, nd := range c.nodes {
		joins = append(joins, nd.gossipAddr)
	}
	runWorker(t, ctx, cl, group, worker.WithWorkerID(id), worker.WithWorkerTTL(2*time.Second),
		worker.WithGossipAddr("127.0.0.1:0"), worker.WithJoin(joins...), worker.WithWorkerLogger(hclog.NewNullLogger()))
}

// groupLoad is the JavaScript expression of the load of worker in the
// groups view: the text beside its bar, then the bar's width.
func groupLoad(worker string) string {
	return fmt.Sprintf(`(() => { const l = document.querySelector('#group-workers tr[data-worker=%q] .load'); return l ? l.querySelector(':scope > span').textContent + ' ' + l.querySelector('.bar span').style.width : '' })()`, worker)
}

// workerCell is the JavaScript expression of the text of the cell of
// class cls in worker's row of the workers view.
func workerCell(worker, cls string) string {
	return fmt.Sprintf(`document.querySelector('#workers tr[data-worker=%q] td.%s')?.textContent`, worker, cls)
}

// workerKeys is the JavaScript expression of the keys listed in worker's
// row of the workers view, joined by commas.
func workerKeys(worker string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('#workers tr[data-worker=%q] td.keys code')].map(c => c.textContent).join(',')`, worker)
}

// TestPageWithoutACLs: against one `tenure server -dev` over plain HTTP
// with ACLs off, no token is needed: the page shows the lease, offers to
// revoke it, and the revoke frees it.
func TestPageWithoutACLs(t *testing.T) {
	needChromium(t)
	d := startDev(t, "-min-ttl", "1s")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", d.logs.String())
		}
	})
	cfg := client.DefaultConfig()
	cfg.Addresses, cfg.Holder, cfg.Timeout = []string{d.httpAddr}, "tracker-1", 5*time.Second
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := harness.Context(t, time.Minute)
	var lease *client.Lease
	poll.WaitFor(t, startTimeout, func() error {
		lease, err = cl.Acquire(ctx, "jobs/a", client.WithTTL(2*time.Second))
		return err
	})
	b := newBrowser(t)
	b.run(chromedp.Navigate("http://"+d.httpAddr+"/ui#leases"), chromedp.WaitVisible(chromedp.ID("view-leases")))
	b.click(`#leases tr[data-key="jobs/a"] button.revoke`)
	select {
	case <-lease.Context().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the holder still holds jobs/a 10s after the revoke from the page")
	}
	b.waitTrue(10*time.Second, "jobs/a shows free", leaseRow("jobs/a")+`?.dataset.state === 'free'`)
}
