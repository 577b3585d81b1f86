package cluster_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/test/harness"
	"github.com/tenure-io/tenure/test/harness/inproc"
)

// A key used once is forgotten on every server after the retention; a
// held key is not; a later grant of the forgotten key gets a larger token.
func TestFreeKeyForgottenAfterRetention(t *testing.T) {
	c := inproc.Start(t, 3, inproc.Options{Tweak: func(cfg *cluster.Config) {
		cfg.FreeKeyRetention = 300 * time.Millisecond
		cluster.SetFreeKeySweep(cfg, 20*time.Millisecond)
	}})
	once := acquire(t, c, "locks/once", "h1", time.Second)
	acquire(t, c, "kept", "h2", 5*time.Second)
	err := c.OnLeader(10*time.Second, func(n *cluster.Node) error {
		_, err := n.Release(harness.Context(t, 5*time.Second), "locks/once", "h1", testSecret, once.Token)
		return err
	})
	if err != nil {
		t.Fatalf("release: %v", err)
	}
	released := time.Now()
	harness.WaitUntil(t, 10*time.Second, "locks/once forgotten on every server", func() bool {
		for i := 0; i < c.Len(); i++ {
			if cluster.MachineOf(c.Node(i)).Get("locks/once") != nil {
				return false
			}
		}
		return true
	})
	if since := time.Since(released); since < 300*time.Millisecond {
		t.Errorf("forgotten %v after its release, before the 300ms retention", since)
	}
	for i := 0; i < c.Len(); i++ {
		if l := cluster.MachineOf(c.Node(i)).Get("kept"); l == nil || !l.Held {
			t.Errorf("node %d: held key kept = %+v, want it held", i, l)
		}
	}
	again := acquire(t, c, "locks/once", "h3", time.Second)
	if again.Token <= once.Token+1 {
		t.Errorf("token after forgetting = %d, want more than %d (the counter never goes back)", again.Token, once.Token+1)
	}
}

func TestReleaseOutcomes(t *testing.T) {
	c := inproc.Start(t, 1, inproc.Options{})
	ctx := harness.Context(t, 20*time.Second)
	first := acquire(t, c, "k", "h1", time.Second)
	n := c.Node(c.Leader())

	// Another holder under the current token never held this lease.
	_, err := n.Release(ctx, "k", "h2", testSecret, first.Token)
	var nh *cluster.NotHolderError
	if !errors.As(err, &nh) || nh.Lease.Holder != "h1" || !errors.Is(err, cluster.ErrNotHolder) {
		t.Fatalf("release by another holder = %v, want a NotHolderError naming h1", err)
	}
	if _, err := n.Release(ctx, "k", "h1", testSecret, first.Token+5); !errors.As(err, &nh) {
		t.Fatalf("release under a token the key never had = %v, want a NotHolderError", err)
	}
	if freed, err := n.Release(ctx, "k", "h1", testSecret, first.Token); err != nil || !freed {
		t.Fatalf("release by the holder = %v, %v; want freed", freed, err)
	}
	if freed, err := n.Release(ctx, "k", "h1", testSecret, first.Token); err != nil || freed {
		t.Fatalf("second release = %v, %v; want nothing freed, no error", freed, err)
	}
	second := acquire(t, c, "k", "h2", time.Second)
	if freed, err := n.Release(ctx, "k", "h1", testSecret, first.Token); err != nil || freed {
		t.Fatalf("release of a lease superseded by %d = %v, %v; want nothing freed, no error", second.Token, freed, err)
	}
	if freed, err := n.Release(ctx, "never-seen", "h1", testSecret, 1); err != nil || freed {
		t.Fatalf("release of a key never seen = %v, %v; want nothing freed, no error", freed, err)
	}

	// Renewals by a holder that does not hold the key say so.
	_, err = n.Renew(ctx, "k", "h1", testSecret, second.Token)
	var lost *cluster.LostError
	if !errors.As(err, &lost) || lost.Reason != wire.ReasonNotHolder {
		t.Fatalf("renewal by another holder = %v, want lost with reason not_holder", err)
	}
	if _, err := n.Renew(ctx, "k", "h1", testSecret, first.Token); !errors.As(err, &lost) || lost.Reason != wire.ReasonSuperseded {
		t.Fatalf("renewal of a superseded lease = %v, want lost with reason superseded", err)
	}
}

func TestPutGroupCompareAndSet(t *testing.T) {
	c := inproc.Start(t, 1, inproc.Options{})
	ctx := harness.Context(t, 20*time.Second)
	n := c.Node(c.Leader())
	harness.WaitUntil(t, 10*time.Second, "leader ready", func() bool { return n.Ready() == nil })

	g, err := n.PutGroup(ctx, cluster.GroupSpec{Name: "g", Keys: []string{"a"}})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	_, err = n.PutGroup(ctx, cluster.GroupSpec{Name: "g", Keys: []string{"b"}})
	var ce *cluster.CASError
	if !errors.As(err, &ce) || ce.Group == nil || ce.Group.ModifyIndex != g.ModifyIndex || !errors.Is(err, cluster.ErrCASFailed) {
		t.Fatalf("replace without cas = %v, want a CASError with the current group", err)
	}
	if _, err := n.PutGroup(ctx, cluster.GroupSpec{Name: "g", Keys: []string{"b"}, CAS: g.ModifyIndex + 1}); !errors.As(err, &ce) {
		t.Fatalf("replace with a wrong cas = %v, want a CASError", err)
	}
	g2, err := n.PutGroup(ctx, cluster.GroupSpec{Name: "g", Keys: []string{"b"}, CAS: g.ModifyIndex})
	if err != nil || len(g2.Keys) != 1 || g2.Keys[0] != "b" {
		t.Fatalf("replace with the right cas = %+v, %v", g2, err)
	}
	g3, err := n.PutGroup(ctx, cluster.GroupSpec{Name: "g", Keys: []string{"c"}, Replace: true})
	if err != nil || g3.Keys[0] != "c" {
		t.Fatalf("replace = %+v, %v", g3, err)
	}
}

// Operators who prohibit different holders at the same moment both get
// theirs: the edits are applied by the state machine, not read, changed
// and written back.
func TestEditKeyControlConcurrent(t *testing.T) {
	c := inproc.Start(t, 1, inproc.Options{})
	ctx := harness.Context(t, 20*time.Second)
	n := c.Node(c.Leader())
	harness.WaitUntil(t, 10*time.Second, "leader ready", func() bool { return n.Ready() == nil })
	holders := []string{"w1", "w2", "w3", "w4", "w5", "w6"}
	var wg sync.WaitGroup
	for _, h := range holders {
		wg.Add(1)
		go func(h string) {
			defer wg.Done()
			if _, _, err := n.EditKeyControl(ctx, "k", cluster.ControlEdit{Prohibit: []string{h}, Force: true}); err != nil {
				t.Errorf("prohibit %s: %v", h, err)
			}
		}(h)
	}
	wg.Wait()
	if got := cluster.MachineOf(n).Control("k").Prohibited; len(got) != len(holders) {
		t.Fatalf("prohibited = %v, want all of %v", got, holders)
	}
	off := true
	ctl, _, err := n.EditKeyControl(ctx, "k", cluster.ControlEdit{Disabled: &off, Allow: []string{"w1"}})
	if err != nil || !ctl.Disabled || len(ctl.Prohibited) != len(holders)-1 {
		t.Fatalf("disable and allow w1 = %+v, %v", ctl, err)
	}
	if _, _, err := n.EditKeyControl(ctx, "k", cluster.ControlEdit{Prohibit: []string{""}}); !errors.Is(err, cluster.ErrInvalid) {
		t.Fatalf("prohibit of an empty holder = %v, want invalid", err)
	}
}

// A holder that acquires its key again with new metadata keeps its lease
// and token, the metadata is replaced, and the leader logs the change.
func TestReacquireReplacesMetadataAndLogsIt(t *testing.T) {
	var logs harness.Buffer
	c := inproc.Start(t, 1, inproc.Options{Tweak: func(cfg *cluster.Config) {
		cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: &logs, Level: hclog.Info})
	}})
	first := acquire(t, c, "k", "h1", time.Second)
	n := c.Node(c.Leader())
	ctx := harness.Context(t, 10*time.Second)
	got, created, err := n.Acquire(ctx, cluster.AcquireRequest{Secret: testSecret, Key: "k", Holder: "h1", TTL: time.Second, Metadata: map[string]string{"addr": "b:2"}})
	if err != nil || created || got.Token != first.Token || got.Metadata["addr"] != "b:2" {
		t.Fatalf("re-acquire with metadata = %+v created %v err %v; want token %d kept with addr b:2", got.Lease, created, err, first.Token)
	}
	harness.WaitUntil(t, 5*time.Second, "the metadata change in the leader's log", func() bool {
		return strings.Contains(logs.String(), "lease_metadata_changed") && strings.Contains(logs.String(), "key=k")
	})
}
