package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/client/worker"
)

// httpAddrs returns the HTTP addresses of every node.
func (c *cluster) httpAddrs() []string {
	addrs := make([]string, len(c.nodes))
	for i, nd := range c.nodes {
		addrs[i] = nd.httpAddr
	}
	return addrs
}

// urls returns addrs with https:// in front on a cluster whose clients use
// TLS (clientTLS), as they are.
func (c *cluster) urls(addrs []string) []string {
	if c.clientTLS == nil {
		return addrs
	}
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a
		if !strings.Contains(a, "://") {
			out[i] = "https://" + a
		}
	}
	return out
}

// newClient returns a Go client, as one process of an application would
// have, with its own holder. It talks to addrs, or to every node.
func (c *cluster) newClient(t *testing.T, holder string, addrs ...string) *client.Client {
	t.Helper()
	if len(addrs) == 0 {
		addrs = c.httpAddrs()
	}
	cfg := client.DefaultConfig()
	cfg.Addresses = c.urls(addrs)
	cfg.Holder = holder
	cfg.Timeout = 5 * time.Second
	if c.clientTLS != nil {
		cfg.TLS = *c.clientTLS
	}
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	return cl
}

// proxy stands between one client and one node: it counts the requests it
// passes on, and can cut the client off (every request then hangs until
// the client gives up, as across a network partition). It removes
// X-Tenure-Leader-Addr from answers so that the client keeps using it
// rather than following the leader directly.
type proxy struct {
	*httptest.Server
	mu   sync.Mutex
	cut  bool
	reqs []proxied
}

// proxied is one request that reached the proxy.
type proxied struct {
	At     time.Time
	Method string
	Path   string
	Query  url.Values
	Cut    bool // the proxy was cut off: it was not passed on
}

func newProxy(t *testing.T, target string) *proxy {
	t.Helper()
	u, err := url.Parse("http://" + target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(r *http.Response) error {
		r.Header.Del(client.HeaderLeaderAddr)
		return nil
	}
	p := &proxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == wire.StreamPath {
			// The proxy cuts a client off request by request, which an
			// upgraded connection would outlive: it passes no request
			// stream, as a proxy that does not pass upgrades, and the
			// client sends requests of their own. (A stream cut off for
			// real: TestSilentStreamIsReplaced, and the fault suite.)
			http.NotFound(w, r)
			return
		}
		p.mu.Lock()
		cut := p.cut
		p.reqs = append(p.reqs, proxied{At: time.Now(), Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Cut: cut})
		p.mu.Unlock()
		if cut {
			// Read the body first: only then does the server watch the
			// connection and end r's context when the client gives up.
			io.Copy(io.Discard, r.Body)
			<-r.Context().Done()
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

// addr returns the proxy's address without scheme.
func (p *proxy) addr() string { return strings.TrimPrefix(p.URL, "http://") }

// setCut cuts the client off, or reconnects it.
func (p *proxy) setCut(cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = cut
}

// requests returns a copy of the requests so far.
func (p *proxy) requests() []proxied {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]proxied(nil), p.reqs...)
}

// cli is one `tenure lock` or `tenure elect` process.
type cli struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{}
	err     error // Wait's result, set before done is closed
}

// startCLI runs the tenure binary with args (e.g. "lock", "-ttl", "2s",
// "KEY", "--", "sh", "-c", "..."), in dir, with TENURE_HTTP_ADDR naming
// every node. Its output goes to a log that t prints if it fails; it is
// killed when t ends.
func (c *cluster) startCLI(t *testing.T, dir, name string, args ...string) *cli {
	t.Helper()
	p := &cli{name: name, logPath: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	logFile, err := os.Create(p.logPath)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Dir = dir
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.Env = append(cleanEnv(), client.EnvHTTPAddr+"="+strings.Join(c.httpAddrs(), ","))
	p.cmd.SysProcAttr = childProcAttr()
	if err := p.cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("start tenure %s: %v", strings.Join(args, " "), err)
	}
	go func() {
		p.err = p.cmd.Wait()
		logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("output of %s (tenure %s):\n%s", name, strings.Join(args, " "), tail(p.logPath, 30))
		}
	})
	return p
}

// wait waits up to timeout for the process to exit and returns its exit
// status; it fails t if it does not exit.
func (p *cli) wait(t *testing.T, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("%s still running after %v", p.name, timeout)
	}
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return 0
	case errors.As(p.err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("%s: %v", p.name, p.err)
	return -1
}

// signal sends s to the process.
func (p *cli) signal(t *testing.T, s syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(s); err != nil {
		t.Fatalf("signal %s: %v", p.name, err)
	}
}

// lines returns the lines of the file at path (none if it does not exist).
func lines(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// workerRun is a worker.Worker running in the background of a test, with
// the keys its handler holds now.
type workerRun struct {
	w     *worker.Worker
	mu    sync.Mutex
	owned map[string]bool
	stop  context.CancelFunc
	done  chan struct{} // closed when Run has returned err
	err   error
}

// runWorker runs a Worker of cl for group, whose handler holds each key
// until it is taken back; it stops when stop is called or the test ends.
func runWorker(t *testing.T, ctx context.Context, cl *client.Client, group string, opts ...worker.WorkerOption) *workerRun {
	t.Helper()
	r := &workerRun{owned: map[string]bool{}, done: make(chan struct{})}
	w := worker.New(cl, group, func(ctx context.Context, key string, token uint64) {
		r.mu.Lock()
		r.owned[key] = true
		r.mu.Unlock()
		<-ctx.Done()
		r.mu.Lock()
		delete(r.owned, key)
		r.mu.Unlock()
	}, opts...)
	r.w = w
	ctx, r.stop = context.WithCancel(ctx)
	go func() {
		r.err = w.Run(ctx)
		close(r.done)
	}()
	t.Cleanup(func() { r.stop(); <-r.done })
	return r
}

// owns reports an error unless the worker holds n keys.
func (r *workerRun) owns(n int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.owned) != n {
		return fmt.Errorf("the worker holds %d keys, want %d", len(r.owned), n)
	}
	return nil
}
