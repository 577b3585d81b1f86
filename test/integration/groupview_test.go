package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
)

// groupView reads the group (a linearizable read).
func groupView(admin *client.Client, name string) (*client.Group, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g, _, err := admin.Groups().Get(ctx, name, nil)
	if err != nil {
		return nil, fmt.Errorf("get group %s: %w", name, err)
	}
	return g, nil
}

// view returns the group's view, or an error when a worker of the fleet
// stopped on its own.
func (f *workerFleet) view(admin *client.Client) (*client.Group, error) {
	if err := f.alive(); err != nil {
		return nil, err
	}
	return groupView(admin, f.group)
}

// settledView is view, then settled: the group and its holders, or why it
// has not settled.
func (f *workerFleet) settledView(admin *client.Client, owners []string, owned int) (*client.Group, map[string]string, error) {
	g, err := f.view(admin)
	if err != nil {
		return nil, nil, err
	}
	h, err := settled(g, f.runs, owners, owned)
	return g, h, err
}

// settled checks that the group is at rest: every key that has a target is
// held by it, under the lease the group shows, and exactly that worker's
// handler runs for it; every key without a target is free and no handler
// runs for it; no key is being prepared; owned keys have an owner; only
// workers in owners own keys.
// It returns the holder of each owned key.
func settled(g *client.Group, runs *runLog, owners []string, owned int) (map[string]string, error) {
	may := make(map[string]bool, len(owners))
	for _, w := range owners {
		may[w] = true
	}
	holders := make(map[string]string, len(g.Keys))
	for _, k := range g.Keys {
		running := runs.working(k.Key)
		if k.Target == "" {
			if k.State != "free" || len(running) > 0 {
				return nil, fmt.Errorf("%s has no target but is %s by %q, %d handlers run", k.Key, k.State, k.Worker, len(running))
			}
			continue
		}
		if k.Preparing != "" {
			return nil, fmt.Errorf("%s is being prepared by %s", k.Key, k.Preparing)
		}
		if !may[k.Target] {
			return nil, fmt.Errorf("%s targets %q, not one of the workers that may own keys", k.Key, k.Target)
		}
		if k.State != "held" || k.Worker != k.Target {
			return nil, fmt.Errorf("%s targets %s but is %s by %q", k.Key, k.Target, k.State, k.Worker)
		}
		if len(running) != 1 || running[0].worker != k.Worker || running[0].token != k.Token {
			return nil, fmt.Errorf("%s is held by %s with token %d, but the handlers working on it are %+v", k.Key, k.Worker, k.Token, running)
		}
		holders[k.Key] = k.Worker
	}
	if len(holders) != owned {
		return nil, fmt.Errorf("%d of %d keys owned, want %d", len(holders), len(g.Keys), owned)
	}
	return holders, nil
}

// waitSettled polls the group until settled accepts it and returns the
// holders and the time it took.
func waitSettled(t *testing.T, admin *client.Client, f *workerFleet, owners []string, owned int, timeout time.Duration) (map[string]string, time.Duration) {
	t.Helper()
	start := time.Now()
	var holders map[string]string
	poll.WaitFor(t, timeout, func() error {
		var err error
		_, holders, err = f.settledView(admin, owners, owned)
		return err
	})
	return holders, time.Since(start)
}

// countByWorker counts the keys of each worker in owners (0 for those
// without keys).
func countByWorker(holders map[string]string, owners []string) map[string]int {
	out := make(map[string]int, len(owners))
	for _, w := range owners {
		out[w] = 0
	}
	for _, w := range holders {
		out[w]++
	}
	return out
}

// checkEven fails t unless the keys are spread as evenly as possible: no
// worker above ceil(K/N), none below floor(K/N).
func checkEven(t *testing.T, holders map[string]string, owners []string) {
	t.Helper()
	k, n := len(holders), len(owners)
	lo, hi := k/n, (k+n-1)/n
	counts := countByWorker(holders, owners)
	least, most := k, 0
	for _, w := range owners {
		c := counts[w]
		least, most = min(least, c), max(most, c)
		if c < lo || c > hi {
			t.Errorf("%s owns %d keys, want %d to %d (%d keys over %d workers)", w, c, lo, hi, k, n)
		}
	}
	t.Logf("%d keys over %d workers: %d to %d keys each", k, n, least, most)
}

// heldBy returns the holder of every held key of g.
func heldBy(g *client.Group) map[string]string {
	out := map[string]string{}
	for _, k := range g.Keys {
		if k.State == "held" {
			out[k.Key] = k.Worker
		}
	}
	return out
}

func mustView(t *testing.T, admin *client.Client, group string) *client.Group {
	t.Helper()
	g, err := groupView(admin, group)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
