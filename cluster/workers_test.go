package cluster_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
)

// A worker is known to a drain by its registration, its targets or its
// leases, not only by gossip; a key to a control by its group, its lease
// or its controls. Anything else is ErrNotFound unless forced, and the
// forced change happens.
func TestDrainAndControlOfUnknownNames(t *testing.T) {
	ctx := context.Background()
	n, boot := startBootstrappedACLNode(t, ctx)
	a, err := n.ResolveToken(boot.SecretID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.PutGroup(ctx, cluster.GroupSpec{Name: "parts", Prefix: "parts/", Count: 2}); err != nil {
		t.Fatal(err)
	}
	if err := n.RegisterWorker(ctx, a, "registered", []string{"parts"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.Acquire(ctx, cluster.AcquireRequest{Secret: testSecret, Key: "loose", Holder: "holder-1#ab", TTL: 30 * time.Second,
		Metadata: map[string]string{"worker": "holder-1"}}); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"registered", "holder-1"} {
		if _, err := n.DrainWorker(ctx, w, true, false); err != nil {
			t.Errorf("drain %s: %v", w, err)
		}
	}
	if _, err := n.DrainWorker(ctx, "nobody", true, false); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("drain nobody: %v, want ErrNotFound", err)
	}
	if _, err := n.DrainWorker(ctx, "nobody", true, true); err != nil {
		t.Errorf("forced drain of nobody: %v", err)
	}
	if !cluster.MachineOf(n).Drained("nobody") {
		t.Error("the forced drain of nobody did not happen")
	}
	for _, key := range []string{"parts/1", "loose"} {
		if _, err := n.SetKeyControl(ctx, key, fsm.KeyControl{Disabled: true}, false); err != nil {
			t.Errorf("disable %s: %v", key, err)
		}
	}
	if _, err := n.SetKeyControl(ctx, "typo", fsm.KeyControl{Prohibited: []string{"h"}}, false); !errors.Is(err, cluster.ErrNotFound) {
		t.Errorf("prohibit on an unknown key: %v, want ErrNotFound", err)
	}
	if _, err := n.SetKeyControl(ctx, "typo", fsm.KeyControl{Prohibited: []string{"h"}}, true); err != nil {
		t.Errorf("forced prohibit: %v", err)
	}
	if got := cluster.MachineOf(n).Control("typo"); len(got.Prohibited) != 1 {
		t.Errorf("after the forced prohibit the controls are %+v", got)
	}
}
