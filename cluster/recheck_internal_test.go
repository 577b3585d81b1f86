package cluster

import (
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
)

// fakeReloader checks each configuration as hashicorp/raft does, with a
// leader lease timeout equal to the heartbeat timeout (tenure's defaults).
type fakeReloader struct {
	state   raft.RaftState
	cfg     raft.ReloadableConfig
	applied []time.Duration
	fail    error
}

func (f *fakeReloader) State() raft.RaftState                   { return f.state }
func (f *fakeReloader) ReloadableConfig() raft.ReloadableConfig { return f.cfg }
func (f *fakeReloader) ReloadConfig(rc raft.ReloadableConfig) error {
	if f.fail != nil {
		return f.fail
	}
	c := raft.DefaultConfig()
	c.LocalID = "f"
	c.LeaderLeaseTimeout = 100 * time.Millisecond
	c.HeartbeatTimeout, c.ElectionTimeout = rc.HeartbeatTimeout, rc.ElectionTimeout
	c.TrailingLogs, c.SnapshotInterval, c.SnapshotThreshold = rc.TrailingLogs, rc.SnapshotInterval, rc.SnapshotThreshold
	if err := raft.ValidateConfig(c); err != nil {
		return err
	}
	f.applied = append(f.applied, rc.HeartbeatTimeout)
	f.cfg = rc
	return nil
}

// TestRecheckLeaderLowersTheHeartbeatTimeoutBackOnAFollower: on a
// follower, recheckLeader raises the heartbeat timeout by a nanosecond and
// lowers it back to what it was, which wakes hashicorp/raft's follower
// loop (TestLoweringTheHeartbeatTimeoutMakesAFollowerCheckItsLeader); the
// configuration ends as it began. A leader or candidate is left alone.
func TestRecheckLeaderLowersTheHeartbeatTimeoutBackOnAFollower(t *testing.T) {
	base := raft.ReloadableConfig{HeartbeatTimeout: 100 * time.Millisecond, ElectionTimeout: 100 * time.Millisecond, TrailingLogs: 10240, SnapshotThreshold: 8192, SnapshotInterval: time.Minute}
	f := &fakeReloader{state: raft.Follower, cfg: base}
	if err := recheckLeader(f); err != nil {
		t.Fatal(err)
	}
	if got, want := fmt.Sprint(f.applied), fmt.Sprint([]time.Duration{base.HeartbeatTimeout + time.Nanosecond, base.HeartbeatTimeout}); got != want {
		t.Errorf("heartbeat timeouts applied: %s, want %s", got, want)
	}
	if f.cfg != base {
		t.Errorf("configuration after the re-check: %+v, want %+v", f.cfg, base)
	}
	for _, st := range []raft.RaftState{raft.Leader, raft.Candidate, raft.Shutdown} {
		f := &fakeReloader{state: st, cfg: base}
		if err := recheckLeader(f); err != nil || len(f.applied) != 0 {
			t.Errorf("%v: applied %v, error %v; want nothing", st, f.applied, err)
		}
	}
	boom := errors.New("refused")
	if err := recheckLeader(&fakeReloader{state: raft.Follower, cfg: base, fail: boom}); !errors.Is(err, boom) {
		t.Errorf("a refused reload: %v, want it returned", err)
	}
}

// TestLoweringTheHeartbeatTimeoutMakesAFollowerCheckItsLeader: the
// hashicorp/raft behaviour recheckLeader relies on. Three voters over an
// in-memory transport; the leader is cut off; a follower whose heartbeat
// timeout was raised to a minute at once (so that its own timer cannot
// end its wait) stands for election within a moment of the timeout being
// lowered back, once a heartbeat timeout has passed without the leader.
func TestLoweringTheHeartbeatTimeoutMakesAFollowerCheckItsLeader(t *testing.T) {
	const hb = 200 * time.Millisecond
	ids := []raft.ServerID{"a", "b", "c"}
	trans := make([]*raft.InmemTransport, len(ids))
	var servers []raft.Server
	for i, id := range ids {
		var addr raft.ServerAddress
		addr, trans[i] = raft.NewInmemTransport(raft.ServerAddress(id))
		servers = append(servers, raft.Server{ID: id, Address: addr})
	}
	for i := range trans {
		for j := range trans {
			if i != j {
				trans[i].Connect(trans[j].LocalAddr(), trans[j])
			}
		}
	}
	rafts := make([]*raft.Raft, len(ids))
	for i, id := range ids {
		conf := raft.DefaultConfig()
		conf.LocalID = id
		conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = hb, hb, hb
		conf.Logger = hclog.NewNullLogger()
		conf.LogOutput = io.Discard
		store := raft.NewInmemStore()
		r, err := raft.NewRaft(conf, &raft.MockFSM{}, store, store, raft.NewDiscardSnapshotStore(), trans[i])
		if err != nil {
			t.Fatal(err)
		}
		rafts[i] = r
		t.Cleanup(func() { r.Shutdown().Error() })
	}
	if err := rafts[0].BootstrapCluster(raft.Configuration{Servers: servers}).Error(); err != nil {
		t.Fatal(err)
	}
	leader := -1
	for deadline := time.Now().Add(10 * time.Second); leader < 0 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		for i, r := range rafts {
			if r.State() == raft.Leader {
				leader = i
			}
		}
	}
	if leader < 0 {
		t.Fatal("no leader in 10 s")
	}
	follower := rafts[(leader+1)%3]
	other := rafts[(leader+2)%3]
	// The other follower may not stand: its timeout is a minute too.
	slow := follower.ReloadableConfig()
	slow.HeartbeatTimeout, slow.ElectionTimeout = time.Minute, time.Minute
	for _, r := range []*raft.Raft{follower, other} {
		if err := r.ReloadConfig(slow); err != nil {
			t.Fatal(err)
		}
	}
	trans[leader].DisconnectAll()
	for i := range trans {
		trans[i].Disconnect(trans[leader].LocalAddr())
	}
	time.Sleep(hb + hb/2)
	if st := follower.State(); st != raft.Follower {
		t.Fatalf("the follower is %v before its timeout is lowered: the test cannot tell", st)
	}
	normal := slow
	normal.HeartbeatTimeout, normal.ElectionTimeout = hb, hb
	lowered := time.Now()
	if err := follower.ReloadConfig(normal); err != nil {
		t.Fatal(err)
	}
	for follower.State() == raft.Follower {
		if time.Since(lowered) > 2*time.Second { // its own timer would wait a minute
			t.Fatalf("still a follower %v after its heartbeat timeout was lowered, %v after the leader was cut off", time.Since(lowered), time.Since(lowered)+hb+hb/2)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
