//go:build linux

package sidebyside

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/test/harness"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/test/jepsen/netns"
)

// TestLocksSideBySide is the short run of the four arms in `make test`:
// etcd's Mutex and tenure's lease against the current etcd, each with the
// store unfenced and fenced, under one seed and nemesis schedule. The
// fenced arms must show no anomaly in the store's history, and their fence
// must have refused at least one write (a paused holder reached the
// store); the unfenced ones are reported as they are, and at least one of
// them must show an anomaly, or the nemesis and the checker proved nothing
// this run (they are the negative control). It needs root (network namespaces), PostgreSQL and
// the Go toolchain (it builds tenure, etcd and the agent, unless
// TENURE_BIN and ETCD_CURRENT_BIN name them); without root or PostgreSQL
// it skips, and under CI=true it fails. SIDEBYSIDE_ARMS=a,d runs only
// those arms; SIDEBYSIDE_DIR keeps the servers' and agents' logs.
func TestLocksSideBySide(t *testing.T) {
	if testing.Short() {
		t.Skip("side-by-side lock test skipped in -short mode")
	}
	missing := func(why string) {
		harness.Missing(t, "side-by-side lock test: "+why+" (run as root; make test installs postgresql)")
	}
	if err := netns.Available(); err != nil {
		missing(err.Error())
	}
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres"); len(m) == 0 {
		missing("PostgreSQL not found (Debian's postgresql)")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		missing("setpriv not found (util-linux)")
	}
	bins, err := Build(filepath.Join("..", "..", ".."), t.TempDir(), Binaries{
		Tenure: os.Getenv("TENURE_BIN"), EtcdCurrent: os.Getenv("ETCD_CURRENT_BIN")})
	if err != nil {
		t.Fatal(err)
	}
	arms, err := Arms(bins, false)
	if err != nil {
		t.Fatal(err)
	}
	if only := os.Getenv("SIDEBYSIDE_ARMS"); only != "" {
		arms = slices.DeleteFunc(arms, func(a Arm) bool { return !slices.Contains(strings.Split(only, ","), a.Name) })
	}
	seed := uint64(time.Now().UnixNano() % 1_000_000)
	t.Logf("seed %d", seed)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	results, err := Run(ctx, Config{
		Arms: arms, Agent: bins.Agent, Seed: seed,
		Duration: 15 * time.Second, Agents: 4, TTL: 2 * time.Second,
		PauseProb: 0.15, Pause: 3500 * time.Millisecond, CutEvery: 5 * time.Second,
		Dir: resultsDir(t),
		Log: hclog.New(&hclog.LoggerOptions{Name: "sidebyside", Level: hclog.Info, Output: os.Stderr}),
	})
	if err != nil {
		t.Fatal(err)
	}
	unfencedBad := false
	for _, r := range results {
		t.Logf("(%s) %s: %s; fence refused %d, lock lost before the write %d, failed %d; %d pauses, %d cuts",
			r.Arm.Name, r.Arm.Label, r.Anomalies, r.Refused, r.LostLock, r.Failed, r.Pauses, r.Cuts)
		if r.Anomalies.Committed == 0 {
			t.Errorf("(%s) %s: no write committed: the workload did not run", r.Arm.Name, r.Arm.Label)
		}
		if r.Arm.Fence == "read-write" && r.Anomalies.Bad() {
			t.Errorf("(%s) %s: anomalies in a fenced store: %s", r.Arm.Name, r.Arm.Label, r.Anomalies)
		}
		if r.Arm.Fence != "" && r.Refused == 0 {
			t.Errorf("(%s) %s: the fence refused no write: no paused holder reached the store, so the arm proves nothing this run", r.Arm.Name, r.Arm.Label)
		}
		if r.Arm.Fence == "" && r.Anomalies.Bad() {
			unfencedBad = true
		}
	}
	if !unfencedBad {
		t.Errorf("no anomaly in any unfenced arm (seed %d): the nemesis and the checker caught nothing, so the fenced arms' clean histories prove nothing this run", seed)
	}
}

// resultsDir is where the arms keep their servers' and agents' logs:
// SIDEBYSIDE_DIR if set (kept), else a temporary folder.
func resultsDir(t *testing.T) string {
	if d := os.Getenv("SIDEBYSIDE_DIR"); d != "" {
		return d
	}
	return t.TempDir()
}
