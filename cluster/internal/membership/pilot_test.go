package membership

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/rounds"
)

// fakeRaft is a Raft configuration that changes as the leader asks, and
// records each change.
type fakeRaft struct {
	mu      sync.Mutex
	servers []raft.Server
	changes []string
}

type done struct{ err error }

func (f done) Error() error  { return f.err }
func (f done) Index() uint64 { return 0 }

type configDone struct {
	done
	cfg raft.Configuration
}

func (f configDone) Configuration() raft.Configuration { return f.cfg }

func (r *fakeRaft) BootstrapCluster(raft.Configuration) raft.Future { return done{} }
func (r *fakeRaft) LastIndex() uint64                               { return 100 }
func (r *fakeRaft) CommitIndex() uint64                             { return 100 }
func (r *fakeRaft) CurrentTerm() uint64                             { return 2 }

func (r *fakeRaft) GetConfiguration() raft.ConfigurationFuture {
	r.mu.Lock()
	defer r.mu.Unlock()
	return configDone{cfg: raft.Configuration{Servers: append([]raft.Server(nil), r.servers...)}}
}

func (r *fakeRaft) set(id raft.ServerID, addr raft.ServerAddress, s raft.ServerSuffrage, change string) raft.IndexFuture {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes = append(r.changes, fmt.Sprintf("%s %s", change, id))
	for i := range r.servers {
		if r.servers[i].ID == id {
			r.servers[i].Suffrage = s
			if addr != "" {
				r.servers[i].Address = addr
			}
			return done{}
		}
	}
	r.servers = append(r.servers, raft.Server{ID: id, Address: addr, Suffrage: s})
	return done{}
}

func (r *fakeRaft) AddVoter(id raft.ServerID, addr raft.ServerAddress, _ uint64, _ time.Duration) raft.IndexFuture {
	return r.set(id, addr, raft.Voter, "add-voter")
}

func (r *fakeRaft) AddNonvoter(id raft.ServerID, addr raft.ServerAddress, _ uint64, _ time.Duration) raft.IndexFuture {
	return r.set(id, addr, raft.Nonvoter, "add-nonvoter")
}

func (r *fakeRaft) DemoteVoter(id raft.ServerID, _ uint64, _ time.Duration) raft.IndexFuture {
	return r.set(id, "", raft.Nonvoter, "demote")
}

func (r *fakeRaft) RemoveServer(id raft.ServerID, _ uint64, _ time.Duration) raft.IndexFuture {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.changes = append(r.changes, "remove "+string(id))
	for i := range r.servers {
		if r.servers[i].ID == id {
			r.servers = append(r.servers[:i], r.servers[i+1:]...)
			break
		}
	}
	return done{}
}

func (r *fakeRaft) log() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.changes...)
}

// pilotBench is a leader's gossip without memberlist: a clock the test
// moves, the leader's contacts the test sets, and a fake Raft.
type pilotBench struct {
	t        *testing.T
	g        *Gossip
	raft     *fakeRaft
	now      time.Time
	contacts map[raft.ServerID]rounds.Contact
	refuse   map[string]error // admission check verdicts by member name
}

func newPilotBench(t *testing.T, rules Rules, servers ...raft.Server) *pilotBench {
	t.Helper()
	b := &pilotBench{
		t:        t,
		raft:     &fakeRaft{servers: servers},
		now:      time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		contacts: map[raft.ServerID]rounds.Contact{},
		refuse:   map[string]error{},
	}
	b.g = &Gossip{
		cfg: Config{
			Self:  MemberMeta{Role: "server", ID: "n1"},
			Rules: rules,
			Prove: func(m Member) error { return b.refuse[m.Name] },
			Contact: func(id raft.ServerID, _ raft.ServerAddress) (rounds.Contact, bool) {
				ct, ok := b.contacts[id]
				return ct, ok
			},
			Now:  func() time.Time { return b.now },
			Log:  hclog.NewNullLogger(),
			Raft: b.raft,
		},
		members: map[string]*memberEntry{},
		removed: map[string]time.Time{},
		pilot:   newPilot(),
	}
	return b
}

// announce records the member id (a server at raft address addr) with
// status, as a gossip event would, and runs the admission check.
func (b *pilotBench) announce(id, addr, status string) {
	meta, _ := json.Marshal(MemberMeta{Role: "server", ID: id, RaftAddr: addr, ClusterName: "tenure"})
	b.g.record(&memberlist.Node{Name: id, Addr: net.IPv4(127, 0, 0, 1), Port: 7502, Meta: meta}, status)
	b.g.proveMembers()
}

// heard makes the leader hear from the servers ids now, caught up.
func (b *pilotBench) heard(ids ...raft.ServerID) {
	for _, id := range ids {
		b.contacts[id] = rounds.Contact{At: b.now, LastLog: 100}
	}
}

// after moves the clock by d, the leader hearing from the servers alive
// every second on the way, and reconciles.
func (b *pilotBench) after(d time.Duration, alive ...raft.ServerID) {
	for end := b.now.Add(d); b.now.Before(end); {
		b.now = b.now.Add(min(time.Second, end.Sub(b.now)))
		b.heard(alive...)
		b.g.reconcile()
	}
}

func (b *pilotBench) suffrage() map[raft.ServerID]raft.ServerSuffrage {
	out := map[raft.ServerID]raft.ServerSuffrage{}
	for _, s := range b.raft.GetConfiguration().Configuration().Servers {
		out[s.ID] = s.Suffrage
	}
	return out
}

func voter(id string) raft.Server {
	return raft.Server{ID: raft.ServerID(id), Address: raft.ServerAddress(id + ":7501"), Suffrage: raft.Voter}
}

func nonvoter(id string) raft.Server {
	s := voter(id)
	s.Suffrage = raft.Nonvoter
	return s
}

var benchRules = Rules{Voters: 3, Stabilization: 10 * time.Second, DeadAfter: 5 * time.Minute, AddressGrace: 5 * time.Second, Recent: 2 * time.Second, CatchUpLag: 10}

// A dead voter is removed once it has been failed on gossip and silent
// to the leader for DeadAfter, not before; the next one is kept, since
// removing it would leave fewer voters than a majority of the configured
// size.
func TestDeadVoterRemovedAfterItsTimeoutNeverBelowQuorum(t *testing.T) {
	b := newPilotBench(t, benchRules, voter("n1"), voter("n2"), voter("n3"))
	b.announce("n2", "n2:7501", "alive")
	b.announce("n3", "n3:7501", "alive")
	b.heard("n2", "n3")
	b.g.reconcile()
	b.announce("n3", "n3:7501", "dead")
	b.after(5*time.Minute-2*time.Second, "n2")
	if _, ok := b.suffrage()["n3"]; !ok {
		t.Fatalf("n3 removed before its %v: changes %v", benchRules.DeadAfter, b.raft.log())
	}
	b.after(3*time.Second, "n2")
	if _, ok := b.suffrage()["n3"]; ok {
		t.Fatalf("n3 still in the configuration %v after %v dead: changes %v", b.suffrage(), benchRules.DeadAfter, b.raft.log())
	}

	b.announce("n2", "n2:7501", "dead")
	b.after(10 * time.Minute)
	if got, want := fmt.Sprint(b.raft.log()), "[remove n3]"; got != want {
		t.Errorf("changes %s, want %s: removing n2 too would leave 1 voter of a configured 3", got, want)
	}
	if got := b.g.pilot.logged["raft:n2"]; got == "" {
		t.Errorf("no \"dead voter kept\" logged for n2")
	}
}

// A dead non-voter goes after DeadAfter whatever the voters.
func TestDeadNonVoterRemovedAfterItsTimeout(t *testing.T) {
	b := newPilotBench(t, benchRules, voter("n1"), voter("n2"), nonvoter("n5"))
	b.announce("n2", "n2:7501", "alive")
	b.announce("n5", "n5:7501", "dead")
	b.after(5*time.Minute-time.Second, "n2")
	if _, ok := b.suffrage()["n5"]; !ok {
		t.Fatalf("n5 removed before its timeout: %v", b.raft.log())
	}
	b.after(2*time.Second, "n2")
	if got, want := fmt.Sprint(b.raft.log()), "[remove n5]"; got != want {
		t.Errorf("changes %s, want %s", got, want)
	}
}

// A healthy non-voter is promoted once it has been healthy for the
// stabilization time, while the voters are fewer than the configured
// size; a second one then stays a non-voter, and one that fails the
// admission check right before is not promoted.
func TestNonVoterPromotedAfterStabilizationUpToTheSize(t *testing.T) {
	b := newPilotBench(t, benchRules, voter("n1"), voter("n2"), nonvoter("n3"), nonvoter("n4"))
	for _, id := range []string{"n2", "n3", "n4"} {
		b.announce(id, id+":7501", "alive")
	}
	b.refuse["n3"] = errors.New("does not prove to be n3 now")
	b.after(9*time.Second, "n2", "n3", "n4")
	if got := b.suffrage(); got["n3"] != raft.Nonvoter || got["n4"] != raft.Nonvoter {
		t.Fatalf("promoted before the stabilization time: %v", b.raft.log())
	}
	b.after(2*time.Second, "n2", "n3", "n4")
	if got, want := fmt.Sprint(b.raft.log()), "[add-voter n4]"; got != want {
		t.Errorf("changes %s, want %s (n3 refused by the proof, then the size reached)", got, want)
	}
	delete(b.refuse, "n3")
	b.after(time.Minute, "n2", "n3", "n4")
	if got := b.suffrage()["n3"]; got != raft.Nonvoter {
		t.Errorf("n3 is %v with 3 voters of a configured 3, want a non-voter", got)
	}
}

// A non-voter that stops answering loses its stabilization: it must be
// healthy for the whole time again.
func TestNonVoterStabilizationRestartsWhenItFallsSilent(t *testing.T) {
	b := newPilotBench(t, benchRules, voter("n1"), voter("n2"), nonvoter("n3"))
	b.announce("n2", "n2:7501", "alive")
	b.announce("n3", "n3:7501", "alive")
	b.after(8*time.Second, "n2", "n3")
	b.after(5*time.Second, "n2") // n3 silent
	b.after(8*time.Second, "n2", "n3")
	if got := b.suffrage()["n3"]; got != raft.Nonvoter {
		t.Fatalf("n3 promoted after 8s of health: %v", b.raft.log())
	}
	b.after(3*time.Second, "n2", "n3")
	if got := b.suffrage()["n3"]; got != raft.Voter {
		t.Errorf("n3 is %v after 11s of health, want a voter", got)
	}
}
