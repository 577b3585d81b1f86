package integration

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenure-io/tenure/test/harness"

	"github.com/tenure-io/tenure/client"
)

// requireRoot skips t when not root (mounts need it), unless CI=true,
// where a skip would hide that nothing was tested.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	harness.Missing(t, "needs root to mount a small tmpfs for each server's data dir")
}

// smallDisks puts the data dir of each of the n servers c will start on a
// tmpfs of its own, and unmounts them when t ends (after killing the
// servers, which keep files open there).
func smallDisks(t *testing.T, c *cluster, n int) {
	t.Helper()
	var mounted []string
	t.Cleanup(func() {
		for i := range c.nodes {
			c.killQuietly(i)
		}
		for _, dir := range mounted {
			if err := syscall.Unmount(dir, syscall.MNT_DETACH); err != nil {
				t.Errorf("unmount %s: %v", dir, err)
			}
		}
	})
	for i := 1; i <= n; i++ {
		dir := filepath.Join(c.dir, fmt.Sprintf("n%d", i), "data") // where plan puts them
		if err := os.MkdirAll(dir, 0o750); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mount("tenure-test", dir, "tmpfs", 0, "size=16m,mode=0750"); err != nil {
			t.Fatalf("mount a tmpfs on %s: %v", dir, err)
		}
		mounted = append(mounted, dir)
	}
}

// fillDisk takes every free byte of dir's file system with a file, and
// returns how to free them again.
func fillDisk(t *testing.T, dir string) (free func()) {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 64<<10)
	for {
		if _, err := f.Write(chunk); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v", dir, err)
			}
			break
		}
	}
	f.Close()
	return func() {
		if err := os.Remove(path); err != nil {
			t.Errorf("free %s: %v", dir, err)
		}
	}
}

func (c *cluster) readyz(i int) (client.Readiness, int) {
	var out client.Readiness
	r, err := c.try(c.nodes[i].httpAddr, http.MethodGet, "/readyz", nil)
	if err != nil {
		return client.Readiness{Reason: err.Error()}, 0
	}
	r.decodeQuiet(&out)
	return out, r.Status
}

func (r reply) decodeQuiet(v any) { _ = json.Unmarshal(r.Body, v) }

// Guarantee (readiness tells the truth): a follower whose disk is full
// answers /readyz 503 naming the failed write, and its stale reads say it
// is not ready (a 404 for a key the cluster has does not pass for the
// truth); once space is freed it catches up and is ready again.
// Guarantee (a full leader never acknowledges what it could not write): a
// leader whose disk is full steps down (or exits), the others elect a
// leader and serve writes, and every acknowledged acquisition is there
// once space is freed.
func TestFullDiskFollowerNotReadyAndFullLeaderStepsDown(t *testing.T) {
	requireRoot(t)
	c := newCluster(t)
	smallDisks(t, c, 3)
	c.start(t, 3, "-ready-max-lag-time", "1s")
	l := c.leader(t)
	f := c.followers(l)[0]
	var acked []string
	acquire := func(i int, key string) bool {
		r, err := c.try(c.nodes[i].httpAddr, http.MethodPut, "/v1/leases/"+key, map[string]any{"holder": "disk", "ttl": "1m"})
		if err == nil && (r.Status == http.StatusOK || r.Status == http.StatusCreated) {
			acked = append(acked, key)
			return true
		}
		return false
	}
	for i := 0; i < 5; i++ {
		if !acquire(l, fmt.Sprintf("before-%d", i)) {
			t.Fatalf("acquire before the fault failed")
		}
	}
	poll.WaitUntil(t, 10*time.Second, "follower ready before the fault", func() bool { _, code := c.readyz(f); return code == http.StatusOK })

	// A full follower.
	free := fillDisk(t, c.nodes[f].dataDir)
	var last string
	deadline := time.Now().Add(30 * time.Second)
	for n := 0; ; n++ {
		key := fmt.Sprintf("follower-full-%d", n)
		if acquire(l, key) {
			last = key
		}
		if n%10 == 9 {
			if rd, code := c.readyz(f); code == http.StatusServiceUnavailable && strings.Contains(rd.Reason, "no space left on device") {
				t.Logf("full follower after %d acquisitions: %s", n+1, rd.Reason)
				break
			}
		}
		if time.Now().After(deadline) || n >= 5000 {
			rd, code := c.readyz(f)
			t.Fatalf("follower's disk full for %d writes: readyz %d %+v, want 503 naming no space left on device", n+1, code, rd)
		}
	}
	st, err := c.status(f)
	if err != nil || !strings.Contains(st.NotReady, "no space left on device") || st.DiskWriteErrors == 0 {
		t.Errorf("status of the full follower: %+v, %v; want not_ready naming the full disk, disk write errors", st, err)
	}
	r := c.callOnce(t, f, http.MethodGet, "/v1/leases/"+last+"?stale=true", nil)
	if r.Header.Get(client.HeaderNotReady) == "" {
		t.Errorf("stale read of %s on the full follower: %v without %s, want it set", last, r, client.HeaderNotReady)
	}
	free()
	freed := time.Now()
	poll.WaitFor(t, 20*time.Second, func() error {
		if rd, code := c.readyz(f); code != http.StatusOK {
			return fmt.Errorf("readyz %d %+v after space was freed, want 200", code, rd)
		}
		if r := c.callOnce(t, f, http.MethodGet, "/v1/leases/"+last+"?stale=true", nil); r.Status != http.StatusOK {
			return fmt.Errorf("stale read of %s: %v, want 200 once caught up", last, r)
		}
		return nil
	})
	t.Logf("full follower ready %v after space was freed", time.Since(freed).Round(time.Millisecond))

	// A full leader.
	free = fillDisk(t, c.nodes[l].dataDir)
	others := c.followers(l)
	newLeader := -1
	deadline = time.Now().Add(30 * time.Second)
	for n := 0; newLeader < 0; n++ {
		if !acquire(others[n%len(others)], fmt.Sprintf("leader-full-%d", n)) {
			// Refusals come back at once while there is no leader: pace
			// the loop so that the election, not the count, bounds it.
			time.Sleep(10 * time.Millisecond)
		}
		for _, i := range others {
			if st, err := c.status(i); err == nil && st.Role == "leader" && st.Ready {
				newLeader = i
			}
		}
		if time.Now().After(deadline) || n >= 5000 {
			t.Fatalf("leader's disk full for %d writes: no other server leads", n+1)
		}
	}
	if st, err := c.status(l); err == nil && st.Role == "leader" {
		t.Errorf("full server %s still leads (term %d)", c.nodes[l].id, st.Term)
	}
	for i := 0; i < 5; i++ {
		if !acquire(newLeader, fmt.Sprintf("after-step-down-%d", i)) {
			t.Errorf("acquire on the new leader %s failed while the old one's disk is full", c.nodes[newLeader].id)
		}
	}
	free()
	if c.nodes[l].running() == nil {
		t.Logf("%s exited on its full disk (could not persist a term); restarting it", c.nodes[l].id)
		c.restart(t, l)
	}
	// Raft's replication backs off for at most about 10 s after failed
	// appends. (Runs that waited here for ever, and the follower above for
	// 20 s, were raft's pipelined replication stopping for good after a
	// refused append: cluster/internal/transport/pipeline.go.)
	poll.WaitFor(t, 30*time.Second, func() error {
		if rd, code := c.readyz(l); code != http.StatusOK {
			return fmt.Errorf("old leader: readyz %d %+v after space was freed, want 200", code, rd)
		}
		return nil
	})
	// No acknowledged acquisition is lost: each reads back, linearizably.
	for _, key := range acked {
		if r := c.call(t, l, http.MethodGet, "/v1/leases/"+key, nil); r.Status != http.StatusOK {
			t.Errorf("acknowledged acquisition of %s: read %v, want 200", key, r)
		}
	}
	t.Logf("%d acquisitions acknowledged and read back", len(acked))
}
