package integration

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tenure-io/tenure/test/harness"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// screenshots, when set, is the directory the page's tests write a PNG of
// each view into (make screenshots: docs/img).
var screenshots = flag.String("screenshots", os.Getenv("TENURE_SCREENSHOTS"), "write a PNG of each view of the page into this directory")

// chromium is the browser the page's tests drive ("" when there is none).
var chromium = sync.OnceValue(findChromium)

// needChromium skips t, saying why, when there is no Chromium; under
// CI=true it fails t instead (`make test` installs chromium when it runs
// as root).
func needChromium(t *testing.T) {
	t.Helper()
	if chromium() != "" {
		return
	}
	harness.Missing(t, "chromium not found (install Debian's chromium, `make browser-deps` as root, or set TENURE_CHROMIUM to a Chromium or Chrome binary)")
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

// The package's page tests share one Chromium process, each in a tab of
// its own: starting the browser costs seconds on a busy machine. TestMain
// stops it after the last test.
var (
	browserOnce sync.Once
	browserCtx  context.Context
	browserErr  error
	stopBrowser = func() {}
)

func startBrowser() (context.Context, error) {
	browserOnce.Do(func() {
		opts := append(chromedp.DefaultExecAllocatorOptions[:],
			chromedp.ExecPath(chromium()),
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
		t.Fatalf("start %s: %v", chromium(), err)
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

// screenshot writes the viewport as ui-name.png into the screenshot
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

// leaseRow is the JavaScript expression of the leases view's row of key.
func leaseRow(key string) string {
	return fmt.Sprintf(`document.querySelector('#leases tr[data-key=%q]')`, key)
}
