package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
)

// workerHolds is how many keys each worker holds, as GET /v1/workers says.
func workerHolds(t *testing.T, admin *client.Client) (map[string]int, []client.WorkerInfo, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ws, _, err := admin.Groups().Workers(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	out := map[string]int{}
	for _, w := range ws {
		for _, k := range w.Keys {
			out[w.ID] += len(k.Holds)
		}
	}
	return out, ws, nil
}

// TestWorkersDrainWait: two `tenure demo-worker` processes share a group;
// `tenure workers list` shows both; `tenure workers drain w1 -wait` prints
// the keys w1 has left and returns once it holds none, with w2 holding
// them all; draining w2, the last worker, warns; a drain of a worker that
// nothing knows is refused unless -force.
func TestWorkersDrainWait(t *testing.T) {
	const keys = 8
	c := startCluster(t, 1)
	admin := adminClient(t, c)
	putGroup(t, admin, "g", "g-", keys, 0)
	startDemoWorker(t, c, "g", "w1", placementTTL)
	startDemoWorker(t, c, "g", "w2", placementTTL)
	poll.WaitFor(t, settleTimeout, func() error {
		held, ws, err := workerHolds(t, admin)
		if err != nil {
			return err
		}
		if held["w1"] == 0 || held["w2"] == 0 || held["w1"]+held["w2"] != keys {
			return fmt.Errorf("workers %+v: want the %d keys held by both", ws, keys)
		}
		return nil
	})

	out, code := c.tenureCLI(t, "", "workers", "list")
	if code != 0 || !strings.Contains(out, "w1") || !strings.Contains(out, "w2") || !strings.Contains(out, "alive") {
		t.Errorf("workers list: exit %d:\n%s", code, out)
	}

	start := time.Now()
	out, code = c.tenureCLI(t, "", "workers", "drain", "w1", "-wait", "-timeout", "60s")
	t.Logf("drain -wait returned in %v:\n%s", time.Since(start).Round(time.Millisecond), out)
	if code != 0 || !strings.Contains(out, "worker w1: no keys left") {
		t.Fatalf("workers drain w1 -wait: exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "left (group g: g-") {
		t.Errorf("workers drain w1 -wait printed no progress line:\n%s", out)
	}
	if strings.Contains(out, "warning:") {
		t.Errorf("draining w1 while w2 serves g warned:\n%s", out)
	}
	// When -wait returned, w1 held nothing; w2 takes every key.
	held, ws, err := workerHolds(t, admin)
	if err != nil {
		t.Fatal(err)
	}
	if held["w1"] != 0 {
		t.Errorf("after drain -wait returned, w1 holds %d keys: %+v", held["w1"], ws)
	}
	poll.WaitFor(t, 30*time.Second, func() error {
		held, ws, err := workerHolds(t, admin)
		if err == nil && held["w2"] != keys {
			err = fmt.Errorf("workers %+v: want w2 holding all %d keys", ws, keys)
		}
		return err
	})

	out, code = c.tenureCLI(t, "", "workers", "drain", "w2")
	if code != 0 || !strings.Contains(out, `warning: worker "w2" is the last live worker of group "g"`) {
		t.Errorf("draining the last worker of g: exit %d, want 0 and a warning:\n%s", code, out)
	}

	out, code = c.tenureCLI(t, "", "workers", "drain", "w3-typo")
	if code != 1 || !strings.Contains(out, `"w3-typo"`) || !strings.Contains(out, "force=true") {
		t.Errorf("drain of an unknown worker: exit %d, want 1 naming it and force=true:\n%s", code, out)
	}
	if out, code = c.tenureCLI(t, "", "workers", "drain", "w3-typo", "-force"); code != 0 {
		t.Errorf("drain -force of an unknown worker: exit %d:\n%s", code, out)
	}
}
