//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/test/jepsen/history"
)

const (
	workloadDuration = 5 * time.Second
	placeDuration    = 8 * time.Second // workers need a moment to join gossip and be assigned keys
	// maxStop bounds how long a workload may take to stop after its
	// -duration or SIGTERM on a healthy cluster.
	maxStop = 3 * time.Second
)

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// agentRun is one workload of the test, run in-process with run().
type agentRun struct {
	name     string
	args     []string
	duration time.Duration
	stderr   syncBuffer
	code     int
	stopped  time.Duration // from the end of -duration to run's return
}

// TestWorkloadsAgainstCluster runs every workload once against three real
// servers on loopback, without faults, and checks that their histories are
// well-formed and that nothing in them contradicts mutual exclusion.
func TestWorkloadsAgainstCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a three-server cluster")
	}
	jagent := buildJagent(t)
	c := startCluster(t)
	dir := t.TempDir()
	servers := strings.Join(c.urls, ",")
	hist := func(name string) string { return filepath.Join(dir, name+".jsonl") }

	// The store, in-process.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	storeLog := hclog.New(&hclog.LoggerOptions{Output: &syncBuffer{}})
	storeRec, err := openRecorder(hist("store"), storeLog)
	if err != nil {
		t.Fatal(err)
	}
	storeCtx, stopStore := context.WithCancel(context.Background())
	storeDone := make(chan error, 1)
	go func() { storeDone <- serveStore(storeCtx, ln, newStore(fencing, storeRec, storeLog), storeLog) }()
	defer stopStore()
	storeURL := "http://" + ln.Addr().String()

	// The group of the placement workers.
	cfg := client.DefaultConfig()
	cfg.Addresses = c.urls
	cl, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	gctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := cl.Groups().Put(gctx, "g", client.GroupSpec{Keys: []string{"p0", "p1", "p2", "p3", "p4", "p5"}}); err != nil {
		t.Fatalf("create the group: %v", err)
	}

	ports := freePorts(t, 2)
	gossipAddrs := gossipAddrs(t, 2)
	gossipJoin := strings.Join(c.gossip, ",")
	// args are the command line of a workload: the subcommand, the common
	// flags, then extra (a flag given twice takes its last value).
	args := func(sub, name string, d time.Duration, extra ...string) []string {
		common := []string{sub, "-servers", servers, "-history", hist(name), "-duration", d.String(), "-ttl", "2s"}
		return append(common, extra...)
	}
	agents := []*agentRun{
		{name: "r1", duration: workloadDuration, args: args("register", "r1", workloadDuration,
			"-name", "r1", "-procs", "3", "-keys", "k0,k1", "-timeout", "1s", "-seed", "1")},
		{name: "w1", duration: workloadDuration, args: args("mutex", "w1", workloadDuration,
			"-id", "w1", "-store", storeURL, "-keys", "m0", "-ttl", "1s", "-work", "40ms", "-seed", "2")},
		{name: "e1", duration: workloadDuration, args: args("elect", "e1", workloadDuration,
			"-id", "e1", "-election", "jepsen", "-ttl", "1s", "-seed", "4")},
		{name: "e2", duration: workloadDuration, args: args("elect", "e2", workloadDuration,
			"-id", "e2", "-election", "jepsen", "-ttl", "1s", "-seed", "5")},
		{name: "p1", duration: placeDuration, args: args("place", "p1", placeDuration,
			"-id", "p1", "-group", "g", "-gossip-addr", gossipAddrs[0], "-join", gossipJoin, "-status-addr", loopback(ports[0]))},
		{name: "p2", duration: placeDuration, args: args("place", "p2", placeDuration,
			"-id", "p2", "-group", "g", "-gossip-addr", gossipAddrs[1], "-join", gossipJoin, "-status-addr", loopback(ports[1]))},
	}

	// The second mutex worker is a process of its own, stopped by SIGTERM.
	var w2Stderr syncBuffer
	w2 := exec.Command(jagent, "mutex", "-servers", servers, "-store", storeURL, "-id", "w2", "-keys", "m0",
		"-ttl", "1s", "-history", hist("w2"), "-seed", "3")
	w2.Stderr = &w2Stderr
	w2.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := w2.Start(); err != nil {
		t.Fatal(err)
	}
	defer w2.Process.Kill()

	var wg sync.WaitGroup
	for _, a := range agents {
		wg.Go(func() {
			start := time.Now()
			a.code = run(context.Background(), a.args, &a.stderr)
			a.stopped = time.Since(start) - a.duration
		})
	}
	statuses := pollStatus(t, []string{loopback(ports[0]), loopback(ports[1])}, placeDuration)

	time.Sleep(workloadDuration)
	term := time.Now()
	if err := w2.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	w2Err := w2.Wait()
	t.Logf("w2 (a process) stopped %v after SIGTERM", time.Since(term).Round(time.Millisecond))
	if w2Err != nil || time.Since(term) > maxStop {
		t.Errorf("w2 after SIGTERM: %v after %v, want exit 0 within %v; stderr:\n%s", w2Err, time.Since(term), maxStop, tailLines(w2Stderr.String(), 20))
	}
	wg.Wait()
	for _, a := range agents {
		t.Logf("%s stopped %v after its -duration", a.name, a.stopped.Round(time.Millisecond))
		limit := maxStop
		if strings.HasPrefix(a.name, "p") {
			limit = placeStopTimeout + time.Second
		}
		if a.code != exitOK || a.stopped > limit {
			t.Errorf("%s: exit %d, stopped %v after its -duration; want 0 within %v; stderr:\n%s", a.name, a.code, a.stopped, limit, tailLines(a.stderr.String(), 30))
		}
	}
	stopStore()
	<-storeDone
	storeRec.Close()

	read := func(name string) []history.Event {
		evs, err := history.ReadFile(hist(name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return evs
	}
	counts := checkRegister(t, read("r1"), "r1", 3)
	t.Logf("register r1: %v", counts)
	if counts["acquire/ok"] == 0 || counts["read/ok"] == 0 {
		t.Errorf("register: no successful acquire or read in %v", workloadDuration)
	}

	var mutexRuns []*leaseRun
	for _, w := range []string{"w1", "w2"} {
		mutexRuns = append(mutexRuns, checkHolder(t, read(w), w, true)...)
	}
	checkExclusive(t, mutexRuns)
	accepted, lost := checkStore(t, read("store"), fencing, []string{"w1", "w2"})
	t.Logf("mutex: %d leases, %d accepted writes, %d of them lost updates", len(mutexRuns), accepted, lost)
	if len(mutexRuns) == 0 || accepted == 0 {
		t.Errorf("mutex: no lease or no accepted write in %v", workloadDuration)
	}

	var electRuns []*leaseRun
	for _, e := range []string{"e1", "e2"} {
		electRuns = append(electRuns, checkHolder(t, read(e), e, true)...)
	}
	checkExclusive(t, electRuns)
	t.Logf("elect: %d leaderships", len(electRuns))
	if len(electRuns) == 0 || electRuns[0].key != client.ElectionKey("jepsen") {
		t.Errorf("elect: leaderships %+v, want at least one of key %s", electRuns, client.ElectionKey("jepsen"))
	}

	var placeRuns []*leaseRun
	for _, p := range []string{"p1", "p2"} {
		placeRuns = append(placeRuns, checkHolder(t, read(p), p, false)...)
	}
	checkExclusive(t, placeRuns)
	t.Logf("place: %d key ownerships; /keys answers: %v", len(placeRuns), <-statuses)
	if len(placeRuns) == 0 {
		t.Errorf("place: no key owned in %v", placeDuration)
	}
}

// pollStatus asks each status address for GET /keys every 200ms for d,
// checks the answers' shape, and sends the most keys each reported.
func pollStatus(t *testing.T, addrs []string, d time.Duration) <-chan map[string]int {
	out := make(chan map[string]int, 1)
	go func() {
		most := map[string]int{}
		hc := &http.Client{Timeout: time.Second}
		for end := time.Now().Add(d - time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
			for _, a := range addrs {
				resp, err := hc.Get("http://" + a + "/keys")
				if err != nil {
					continue // not serving yet
				}
				var st struct {
					ID   string   `json:"id"`
					Keys []string `json:"keys"`
				}
				err = json.NewDecoder(resp.Body).Decode(&st)
				resp.Body.Close()
				if err != nil || st.ID == "" || st.Keys == nil {
					t.Errorf("GET %s/keys: %+v, %v; want an id and a list of keys", a, st, err)
					continue
				}
				most[st.ID] = max(most[st.ID], len(st.Keys))
			}
		}
		out <- most
	}()
	return out
}

// gossipAddrs returns n gossip addresses on testGossipPort, each on a
// random loopback IP whose port was free for TCP and UDP a moment ago: the
// way workers in network namespaces of their own bind one fixed port (a
// port other than memberlist's default, which a worker must announce).
// testGossipPort is the gossip port of every test worker; each has a
// loopback address of its own.
const testGossipPort = "17946"

func gossipAddrs(t *testing.T, n int) []string {
	t.Helper()
	var out []string
	for tries := 0; len(out) < n; tries++ {
		if tries > 20*n {
			t.Fatalf("found only %d free loopback addresses with port %s", len(out), testGossipPort)
		}
		addr := net.JoinHostPort(fmt.Sprintf("127.%d.%d.%d", 100+rand.IntN(100), rand.IntN(256), 1+rand.IntN(254)), testGossipPort)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		pc, err := net.ListenPacket("udp", addr)
		ln.Close()
		if err != nil {
			continue
		}
		pc.Close()
		if !slices.Contains(out, addr) {
			out = append(out, addr)
		}
	}
	return out
}

var (
	jagentOnce sync.Once
	jagentBin  string
	jagentErr  error
)

// buildJagent builds this command into the directory of buildTenure.
func buildJagent(t *testing.T) string {
	t.Helper()
	buildTenure(t) // makes buildDir
	jagentOnce.Do(func() {
		jagentBin = filepath.Join(buildDir, "jagent")
		if out, err := exec.Command("go", "build", "-o", jagentBin, ".").CombinedOutput(); err != nil {
			jagentErr = err
			t.Logf("go build .: %s", out)
		}
	})
	if jagentErr != nil {
		t.Fatal(jagentErr)
	}
	return jagentBin
}

// TestStoreProcessStopsOnSIGTERM runs `jagent store` as a process: it
// serves, records, and exits 0 on SIGTERM; without a subcommand jagent
// exits 2.
func TestStoreProcessStopsOnSIGTERM(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := buildJagent(t)
	if err := exec.Command(bin).Run(); err == nil || err.(*exec.ExitError).ExitCode() != exitUsage {
		t.Fatalf("jagent without a subcommand: %v, want exit status %d", err, exitUsage)
	}
	addr := loopback(freePorts(t, 1)[0])
	path := filepath.Join(t.TempDir(), "store.jsonl")
	var stderr syncBuffer
	cmd := exec.Command(bin, "store", "-listen", addr, "-history", path)
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sc := newStoreClient("http://"+addr, time.Second)
	var werr error
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if _, werr = sc.write(context.Background(), "k", regWrite{Writer: "a#1", Token: 3, Value: 1}); werr == nil {
			break
		}
	}
	if werr != nil {
		t.Fatalf("the store did not serve: %v\n%s", werr, stderr.String())
	}
	term := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("store after SIGTERM: %v, want exit 0; stderr:\n%s", err, stderr.String())
	}
	t.Logf("the store stopped %v after SIGTERM", time.Since(term).Round(time.Millisecond))
	evs, err := history.ReadFile(path)
	if err != nil || len(evs) != 1 || evs[0].Kind != history.StoreWrite || !evs[0].Accepted {
		t.Fatalf("store history: %+v, %v; want the accepted write", evs, err)
	}
}
