package clientmodule

import (
	"bytes"
	"go/version"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// clientModule is the module path of the Go client.
const clientModule = "github.com/tenure-io/tenure/client"

// consumerMain is a lease-only program: it acquires a lease and releases
// it. It is built, never run.
const consumerMain = `package main

import (
	"context"
	"log"
	"time"

	"github.com/tenure-io/tenure/client"
)

func main() {
	c, err := client.New(client.DefaultConfig())
	if err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	l, err := c.Acquire(ctx, "jobs/nightly", client.WithTTL(10*time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer l.Release(ctx)
	log.Printf("holding %s under token %d", l.Key(), l.Token())
}
`

// heavy are the modules a lease-only program must not compile, nor find
// in its module graph (memberlist is in the graph, through the worker
// package, but must not be compiled).
var (
	heavyInGraph = []string{"github.com/hashicorp/raft", "go.etcd.io/bbolt", "github.com/boltdb/bolt",
		"github.com/prometheus/", "github.com/chromedp/", "github.com/getkin/kin-openapi"}
	heavyInBuild = append([]string{"github.com/hashicorp/memberlist", "github.com/miekg/dns"}, heavyInGraph...)
)

// A program that imports only the client builds from a module of its own
// against the client module alone: its packages and its module graph hold
// no Raft, bbolt, memberlist, Prometheus, chromedp or OpenAPI code, and
// go mod tidy does not raise its go line above the client's.
func TestLeaseOnlyConsumerModule(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the go command is not on PATH: %v", err)
		}
		t.Skipf("the go command is not on PATH (%v): the consumer module is not built", err)
	}
	clientDir, err := filepath.Abs(filepath.Join("..", "..", "client"))
	if err != nil {
		t.Fatal(err)
	}
	clientGo := goLine(t, filepath.Join(clientDir, "go.mod"))

	dir := t.TempDir()
	// The lowest go line a module may start from; tidy raises it to what
	// its requirements need.
	goMod := "module example.com/leaseonly\n\ngo 1.21\n\n" +
		"require " + clientModule + " v0.0.0\n\n" +
		"replace " + clientModule + " => " + clientDir + "\n"
	write(t, filepath.Join(dir, "go.mod"), goMod)
	write(t, filepath.Join(dir, "main.go"), consumerMain)

	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(goBin, args...)
		cmd.Dir = dir
		// The user's GOMODCACHE, GOPROXY, GOFLAGS... come with the
		// environment, so that the modules come from the cache when they
		// are in it; the go line of the toolchain in use is enough.
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off", "GOTOOLCHAIN=local")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return string(out)
	}
	run("mod", "tidy")
	bin := filepath.Join(dir, "leaseonly")
	run("build", "-o", bin, ".")
	deps := run("list", "-deps", ".")
	graph := run("mod", "graph")

	for _, m := range heavyInBuild {
		for _, p := range strings.Fields(deps) {
			if strings.HasPrefix(p, m) {
				t.Errorf("the lease-only program compiles %s", p)
			}
		}
	}
	for _, m := range heavyInGraph {
		if strings.Contains(graph, m) {
			t.Errorf("the consumer's module graph holds %s", m)
		}
	}
	consumerGo := goLine(t, filepath.Join(dir, "go.mod"))
	if got, limit := consumerGo, clientGo; version.Compare("go"+got, "go"+limit) > 0 {
		t.Errorf("go mod tidy raised the consumer's go line to %s, above the client's %s", got, limit)
	}
	if fi, err := os.Stat(bin); err == nil {
		t.Logf("binary: %d bytes; consumer go line: go %s (client: go %s)", fi.Size(), consumerGo, clientGo)
	}
	t.Logf("module graph (go mod graph):\n%s", graph)
}

var goDirective = regexp.MustCompile(`(?m)^go ([0-9][0-9a-z.]*)$`)

// goLine is the version of the go line of the go.mod file at path.
func goLine(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := goDirective.FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s has no go line", path)
	}
	return string(m[1])
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The README's install section names the oldest Go the client builds
// with: the major and minor version of the go line of client/go.mod.
func TestReadmeNamesTheClientsGoVersion(t *testing.T) {
	clientGo := goLine(t, filepath.Join("..", "..", "client", "go.mod"))
	parts := strings.SplitN(clientGo, ".", 3)
	if len(parts) < 2 {
		t.Fatalf("client/go.mod: go line %q has no minor version", clientGo)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<!-- go-version -->(.*?)<!-- /go-version -->`).FindSubmatch(readme)
	if m == nil {
		t.Fatal("README.md has no <!-- go-version --> marker in its install section")
	}
	if want := "Go " + parts[0] + "." + parts[1] + " or newer"; !strings.HasPrefix(string(m[1]), want) {
		t.Errorf("README.md says %q, want it to start with %q (client/go.mod: go %s)", m[1], want, clientGo)
	}
}
