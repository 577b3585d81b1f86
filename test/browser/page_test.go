package browser

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/test/harness"
)

// binary is the tenure binary that TestMain builds; chromium the browser,
// and noBrowser why the tests skip ("" when they run).
var (
	binary    string
	chromium  string
	noBrowser string
	// screenshots, when set, is the directory the tests write a PNG of
	// each view into (make screenshots: docs/img).
	screenshots = flag.String("screenshots", os.Getenv("TENURE_SCREENSHOTS"), "write a PNG of each view of the page into this directory")
)

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	chromium = findChromium()
	if chromium == "" {
		msg := "chromium not found (install Debian's chromium, `make browser-deps` as root, or set TENURE_CHROMIUM to a Chromium or Chrome binary)"
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, "browser: "+msg+": failing under CI=true")
			return 1
		}
		noBrowser = msg
		return m.Run() // every test skips, saying why
	}
	dir, err := os.MkdirTemp("", "tenure-browser-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "browser: temp dir: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	binary = filepath.Join(dir, "tenure")
	build := exec.Command("go", "build", "-o", binary, "./cmd/tenure")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "browser: go build ./cmd/tenure: %v\n%s", err, out)
		return 1
	}
	defer stopBrowser()
	return m.Run()
}

func findChromium() string {
	if p := os.Getenv("TENURE_CHROMIUM"); p != "" {
		if _, err := exec.LookPath(p); err != nil {
			return ""
		}
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// browser is one headless Chromium tab.
type browser struct {
	t   *testing.T
	ctx context.Context
}

// The package's tests share one Chromium process, each in a tab of its
// own: starting the browser costs seconds on a busy machine.
var (
	browserOnce sync.Once
	browserCtx  context.Context
	browserErr  error
	stopBrowser = func() {}
)

func startBrowser() (context.Context, error) {
	browserOnce.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(chromium),
			chromedp.WindowSize(1280, 800),
			// The servers' certificates come from the test's own CA, which
			// the browser does not know; the page is still served over TLS.
			chromedp.Flag("ignore-certificate-errors", true),
			// No attempt at https first for the plain-HTTP server of
			// TestPageWithoutACLs.
			chromedp.Flag("disable-features", "Translate,BlinkGenPropertyTrees,HttpsUpgrades,HttpsFirstBalancedModeAutoEnable"),
		)
		if os.Geteuid() == 0 {
			opts = append(opts, chromedp.NoSandbox)
		}
		actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
		ctx, cancel := chromedp.NewContext(actx)
		stopBrowser = func() { cancel(); cancelAlloc() }
		// The first action starts the browser, which lives as long as the
		// context of that call: no timeout on this one.
		browserCtx, browserErr = ctx, chromedp.Do(ctx)
	})
	return browserCtx, browserErr
}

// newBrowser opens a tab, closed when t ends.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	root, err := startBrowser()
	if err != nil {
		t.Fatalf("start %s: %v", chromium, err)
	}
	ctx, cancel := chromedp.NewContext(root)
	t.Cleanup(cancel)
	b := &browser{t: t, ctx: ctx}
	// The tab, like the browser, lives as long as the context of its
	// first action: no timeout on this one.
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 800)); err != nil {
		t.Fatalf("open a tab: %v", err)
	}
	// Every confirm() dialog is accepted, as an operator would.
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	return b
}

func (b *browser) run(actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// open loads the page at url and types the token into its token field.
func (b *browser) open(url, token string) {
	b.t.Helper()
	b.run(chromedp.Navigate(url), chromedp.WaitVisible(chromedp.ID("token")),
		chromedp.SetValue(chromedp.ID("token"), token), chromedp.Click(chromedp.ID("token-save")))
}

// view switches to one of the page's views through its navigation bar.
func (b *browser) view(name string) {
	b.t.Helper()
	b.run(chromedp.Click(chromedp.ID("nav-"+name)), chromedp.WaitVisible(chromedp.ID("view-"+name)))
}

// click clicks the element of the CSS selector sel in the page's own
// script, in one step: the page re-renders its tables as answers arrive,
// so a node found first and clicked later may be gone.
func (b *browser) click(sel string) {
	b.t.Helper()
	js := fmt.Sprintf("document.querySelector(%q)", sel)
	b.waitTrue(5*time.Second, sel+" is there", js)
	if _, err := eval[bool](b, "("+js+".click(), true)"); err != nil {
		b.t.Fatalf("click %s: %v", sel, err)
	}
}

// eval runs a JavaScript expression in the page and returns its value.
func eval[T any](b *browser, js string) (T, error) {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](js))
}

// waitTrue polls the page until the JavaScript expression js is true,
// and returns how long that took; it fails t after timeout.
func (b *browser) waitTrue(timeout time.Duration, what, js string) time.Duration {
	b.t.Helper()
	start := time.Now()
	var lastErr error
	for time.Since(start) < timeout {
		ok, err := eval[bool](b, "!!("+js+")")
		if lastErr = err; err == nil && ok {
			return time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	text, err := eval[string](b, "document.body.innerText.slice(0, 3000)")
	if err != nil {
		text = err.Error()
	}
	b.t.Fatalf("not true after %v: %s (%v); the page shows:\n%s", timeout, what, lastErr, text)
	return 0
}

// screenshot writes the viewport as name.png into the screenshot
// directory, when one was asked for.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	if *screenshots == "" {
		return
	}
	time.Sleep(300 * time.Millisecond) // let the last answer render
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		b.t.Fatalf("screenshot: %v", err)
	}
	if err := os.MkdirAll(*screenshots, 0o755); err != nil {
		b.t.Fatal(err)
	}
	path := filepath.Join(*screenshots, "ui-"+name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("wrote %s", path)
}

// row is the selector of the leases view's row of key.
func leaseRow(key string) string {
	return fmt.Sprintf(`document.querySelector('#leases tr[data-key=%q]')`, key)
}

// TestPage drives the page in headless Chromium against three servers
// with TLS and ACLs on, the bootstrap token typed into its token field:
// it loads and shows the cluster; a lease acquired through the Go client
// appears without a reload, and shows free once released; a revoke from
// the page (its confirm dialog accepted) frees the key; a group's keys
// move off a worker drained from the page; with no quorum the page says so
// and shows leases greyed as last known.
func TestPage(t *testing.T) {
	if noBrowser != "" {
		t.Skip(noBrowser)
	}
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	lead := c.leader(t)
	// The page is opened on a follower: what it reads is forwarded to the
	// leader, and it survives the leader's loss for the last subtest.
	pageNode := (lead + 1) % 3
	b := newBrowser(t)
	b.open(c.url(pageNode, "/ui"), c.boot)

	t.Run("loads", func(t *testing.T) {
		b.t = t
		b.waitTrue(10*time.Second, "the cluster view lists three servers and a leader",
			`document.querySelectorAll('#servers tbody tr').length === 3 && document.querySelector('#servers .badge.ok')`)
		b.waitTrue(10*time.Second, "the gossip members are listed", `document.querySelectorAll('#members tbody tr').length >= 3`)
		if banner, err := eval[bool](b, `document.getElementById('no-leader').hidden`); err != nil || !banner {
			t.Errorf("the no-leader banner shows with a leader (hidden=%v, %v)", banner, err)
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
		for _, l := range extra {
			l.Release(ctx)
		}
		start := time.Now()
		if err := lease.Release(ctx); err != nil {
			t.Fatalf("Release: %v", err)
		}
		b.waitTrue(5*time.Second, "scenes/042 shows free", leaseRow("scenes/042")+`?.dataset.state === 'free'`)
		t.Logf("from release to the row shown free: %v", time.Since(start).Round(time.Millisecond))
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
		for _, id := range []string{"worker-a", "worker-b"} {
			runWorker(t, ctx, c, id, "partitions")
		}
		b.view("groups")
		owned := `[...document.querySelectorAll('#group-keys tbody tr')]`
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
		b.view("workers")
		b.waitTrue(5*time.Second, "the workers view lists both, worker-a draining",
			`document.querySelector('#workers tr[data-worker="worker-a"]')?.innerText.includes('drain') && document.querySelector('#workers tr[data-worker="worker-b"]')`)
		b.screenshot("workers")
	})

	t.Run("events", func(t *testing.T) {
		b.t = t
		b.view("events")
		b.waitTrue(5*time.Second, "the events view shows the revoke and the drain",
			`document.querySelector('#events tr.ev-revoked') && document.querySelector('#events tr.ev-drained')`)
		b.screenshot("events")
		l, err := app.Acquire(ctx, "scenes/live", client.WithTTL(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer l.Release(ctx)
		b.waitTrue(5*time.Second, "the new acquire arrives in the feed", `[...document.querySelectorAll('#events tr.ev-acquired')].some(r => r.innerText.includes('scenes/live'))`)
	})

	t.Run("a token that may not revoke", func(t *testing.T) {
		b.t = t
		admin := c.client(t, "admin", "")
		if _, err := admin.ACL().SetPolicy(ctx, "viewer", client.ACLPolicySpec{Rules: []client.ACLRule{{Prefix: "", Rights: []string{client.RightRead}}}}); err != nil {
			t.Fatal(err)
		}
		viewer, err := admin.ACL().CreateToken(ctx, client.ACLTokenSpec{Policies: []string{"viewer"}})
		if err != nil {
			t.Fatal(err)
		}
		lease, err := app.Acquire(ctx, "scenes/guarded", client.WithTTL(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer lease.Release(ctx)
		b.open(c.url(pageNode, "/ui#leases"), viewer.SecretID)
		b.waitTrue(10*time.Second, "scenes/guarded shows held", leaseRow("scenes/guarded")+`?.dataset.state === 'held'`)
		b.click(`#leases tr[data-key="scenes/guarded"] button.revoke`)
		b.waitTrue(5*time.Second, "the refusal shows and the revoke buttons go",
			`!document.getElementById('problem').hidden && document.getElementById('problem').innerText.includes('permission_denied') && !document.querySelector('#leases button.revoke')`)
		if l, _, err := app.Leases().Get(ctx, "scenes/guarded", nil); err != nil || l.State != client.StateHeld || l.Ending != "" {
			t.Errorf("scenes/guarded after a refused revoke: %+v, %v; want held", l, err)
		}
		b.open(c.url(pageNode, "/ui#leases"), c.boot) // back to the management token
		b.waitTrue(5*time.Second, "the revoke buttons are back", leaseRow("scenes/guarded")+`?.querySelector('button.revoke')`)
	})

	t.Run("no leader", func(t *testing.T) {
		b.t = t
		if _, err := c.client(t, "tracker-9", "").Acquire(ctx, "scenes/kept", client.WithTTL(30*time.Second)); err != nil {
			t.Fatal(err)
		}
		b.view("leases")
		b.waitTrue(5*time.Second, "scenes/kept shows held", leaseRow("scenes/kept")+`?.dataset.state === 'held'`)
		lead := c.leader(t)
		if lead == pageNode {
			t.Fatalf("the page's server %s leads: want a follower", c.nodes[pageNode].id)
		}
		for i := range c.nodes {
			if i != pageNode {
				c.killNode(c.nodes[i])
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

// runWorker runs an in-process worker of group with id until t ends; its
// handler holds each key until the key is taken from it.
func runWorker(t *testing.T, ctx context.Context, c *cluster, id, group string) {
	t.Helper()
	var joins []string
	for _, nd := range c.nodes {
		joins = append(joins, nd.gossipAddr)
	}
	w := c.client(t, id, "").Worker(group, func(ctx context.Context, key string, token uint64) { <-ctx.Done() },
		client.WithWorkerID(id), client.WithWorkerTTL(2*time.Second), client.WithGossipAddr("127.0.0.1:0"), client.WithJoin(joins...),
		client.WithWorkerLogger(hclog.NewNullLogger()))
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("worker %s: %v", id, err)
		}
	})
}

// TestPageWithoutACLs: against one `tenure server -dev` over plain HTTP
// with ACLs off, no token is needed: the page shows the lease, offers to
// revoke it, and the revoke frees it.
func TestPageWithoutACLs(t *testing.T) {
	if noBrowser != "" {
		t.Skip(noBrowser)
	}
	ports, err := harness.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}
	httpAddr := harness.Loopback(ports[0])
	cmd := exec.Command(binary, "server", "-dev", "-http-addr", httpAddr, "-raft-addr", harness.Loopback(ports[1]),
		"-gossip-addr", harness.Loopback(ports[2]), "-min-ttl", "1s")
	cmd.Env = cleanEnv()
	var log harness.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("server log:\n%s", log.String())
		}
	})
	cfg := client.DefaultConfig()
	cfg.Addresses, cfg.Holder, cfg.Timeout = []string{httpAddr}, "tracker-1", 5*time.Second
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
	b.run(chromedp.Navigate("http://"+httpAddr+"/ui#leases"), chromedp.WaitVisible(chromedp.ID("view-leases")))
	b.click(`#leases tr[data-key="jobs/a"] button.revoke`)
	select {
	case <-lease.Context().Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the holder still holds jobs/a 10s after the revoke from the page")
	}
	b.waitTrue(10*time.Second, "jobs/a shows free", leaseRow("jobs/a")+`?.dataset.state === 'free'`)
}
