package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
)

// TestEventsFollowAcrossFailover: `tenure events -follow` prints every
// change the test makes, once each, in order, while the leader is killed
// and comes back; an interrupt ends it with status 0.
func TestEventsFollowAcrossFailover(t *testing.T) {
	c := startCluster(t, 3)
	app := c.newClient(t, "app")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, from, err := app.Events().List(ctx, client.EventFilter{})
	if err != nil {
		t.Fatal(err)
	}
	follow := c.startCLI(t, t.TempDir(), "events", "events", "-follow", "-json", "-prefix", "ev/", "-index", fmt.Sprint(from))

	type change struct{ Type, Key, Holder string }
	var want []change
	op := 0
	burst := func(n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			op++
			key := fmt.Sprintf("ev/%03d", op)
			l, _, err := app.Leases().Acquire(ctx, key, client.AcquireRequest{Holder: "app", TTL: time.Minute})
			if err != nil {
				t.Fatalf("acquire %s: %v", key, err)
			}
			want = append(want, change{client.EventAcquired, key, "app"})
			if _, err := app.Leases().Release(ctx, key, "app", l.Token); err != nil {
				t.Fatalf("release %s: %v", key, err)
			}
			want = append(want, change{client.EventReleased, key, "app"})
		}
	}
	burst(5)
	old := c.leader(t)
	c.kill(t, old)
	c.leader(t)
	burst(5)
	c.restart(t, old)
	burst(5)

	var got []change
	poll.WaitFor(t, 30*time.Second, func() error {
		got = got[:0]
		var last uint64
		for _, line := range lines(follow.logPath) {
			var ev client.Event
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				return fmt.Errorf("output line %q is not an event: %v", line, err)
			}
			if ev.Index < last {
				return fmt.Errorf("event at index %d after index %d", ev.Index, last)
			}
			last = ev.Index
			got = append(got, change{ev.Type, ev.Key, ev.Holder})
		}
		if len(got) < len(want) {
			return fmt.Errorf("%d of %d events printed", len(got), len(want))
		}
		return nil
	})
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("tenure events -follow printed\n%v\nwant\n%v", got, want)
	}
	if err := follow.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := follow.wait(t, 10*time.Second); code != 0 {
		t.Errorf("tenure events -follow exited with %d after an interrupt, want 0", code)
	}
}
