package fsm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// model is the lease contract of DESIGN.md in its plainest form. The
// Machine must reach the same outcome and token on every command.
type model struct {
	leases map[string]*modelLease
	last   uint64 // last token handed out
	term   uint64 // last established term
}

type modelLease struct {
	holder string
	token  uint64
	held   bool
}

func newModel() *model { return &model{leases: map[string]*modelLease{}} }

// apply returns the outcome of c and the token of the key's record after it
// (0 for no record).
func (md *model) apply(c Command) (Code, uint64) {
	tok := func(l *modelLease) uint64 {
		if l == nil {
			return 0
		}
		return l.token
	}
	switch c := c.(type) {
	case Acquire:
		l := md.leases[c.Key]
		switch {
		case l != nil && l.held && l.holder == c.Holder:
			return Kept, l.token
		case l != nil && l.held:
			return Held, l.token
		}
		md.last++
		md.leases[c.Key] = &modelLease{holder: c.Holder, token: md.last, held: true}
		return Granted, md.last
	case Release:
		l := md.leases[c.Key]
		if l == nil || !l.held || l.holder != c.Holder || l.token != c.Token {
			return NotHeld, tok(l)
		}
		l.held = false
		return Freed, l.token
	case Expire:
		l := md.leases[c.Key]
		if l == nil || !l.held || l.token != c.Token || c.Term < md.term {
			return NotHeld, tok(l)
		}
		l.held = false
		return Freed, l.token
	case Revoke:
		l := md.leases[c.Key]
		if l == nil {
			return NotFound, 0
		}
		if !l.held {
			return NotHeld, l.token
		}
		l.held = false
		return Freed, l.token
	case LeaderEstablished:
		md.term = max(md.term, c.Term)
		return Done, 0
	}
	panic(fmt.Sprintf("model: %T", c))
}

// logGen writes random but plausible logs: most releases and expiries name
// the current lease, some are stale, terms move on with new leaders, and
// some entries are batches.
type logGen struct {
	r    *rand.Rand
	md   *model
	term uint64
	keys []string
	seq  int64
}

// randomLog returns n entries generated from seed over 200 keys.
func randomLog(seed uint64, n int) []entry {
	g := &logGen{r: rand.New(rand.NewPCG(seed, seed^0x5eed)), md: newModel(), term: 1}
	for i := 0; i < 200; i++ {
		g.keys = append(g.keys, fmt.Sprintf("partitions/%d", i))
	}
	log := make([]entry, 0, n)
	for len(log) < n {
		var c Command
		if g.r.IntN(100) < 15 {
			cmds := make([]Command, 2+g.r.IntN(9))
			for i := range cmds {
				cmds[i] = g.command()
			}
			c = Batch{Commands: cmds}
		} else {
			c = g.command()
		}
		log = append(log, entry{term: g.term, data: Encode(c)})
	}
	return log
}

var genHolders = []string{"w-0", "w-1", "w-2", "w-3", "w-4", "w-5"}

// command returns one non-batch command and applies it to the model.
func (g *logGen) command() Command {
	r := g.r
	key := g.keys[r.IntN(len(g.keys))]
	cur := g.md.leases[key]
	holder := genHolders[r.IntN(len(genHolders))]
	token := uint64(r.IntN(int(g.md.last) + 2))
	if cur != nil && r.IntN(10) < 7 {
		holder, token = cur.holder, cur.token
		if r.IntN(10) == 0 {
			token-- // a paused holder's earlier lease
		}
	}
	var c Command
	switch p := r.IntN(100); {
	case p < 40:
		a := Acquire{Key: key, Holder: holder, TTL: time.Duration(1+r.IntN(30)) * time.Second, Time: wall + g.seq}
		if r.IntN(4) == 0 {
			a.Metadata = map[string]string{}
			for i := r.IntN(4); i >= 0; i-- {
				a.Metadata[fmt.Sprintf("m%d", r.IntN(8))] = fmt.Sprint(r.IntN(1000))
			}
		}
		c = a
	case p < 62:
		c = Release{Key: key, Holder: holder, Token: token}
	case p < 80:
		term := g.term
		switch r.IntN(4) {
		case 0:
			term-- // a deposed leader's
		case 1:
			term++ // a leader not yet established
		}
		c = Expire{Key: key, Token: token, Term: term}
	case p < 92:
		if r.IntN(5) == 0 {
			key = fmt.Sprintf("never/%d", r.IntN(10))
		}
		c = Revoke{Key: key}
	default:
		if r.IntN(4) == 0 {
			c = LeaderEstablished{Term: g.term - 1} // late and stale
		} else {
			g.term++
			c = LeaderEstablished{Term: g.term}
		}
	}
	g.seq++
	g.md.apply(c)
	return c
}

// TestRandomLogsMatchModel applies random logs and compares every outcome
// and token with the model, and checks the fencing rule along the way:
// each grant's token is above every earlier token.
func TestRandomLogsMatchModel(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			m, md := New(), newModel()
			var lastGrant uint64
			counts := map[Code]int{}
			check := func(index uint64, c Command, got Result) {
				t.Helper()
				code, token := md.apply(c)
				var gotToken uint64
				if got.Lease != nil {
					gotToken = got.Lease.Token
				}
				if got.Code != code || gotToken != token {
					t.Fatalf("index %d: %#v = %v token %d, want %v token %d", index, c, got.Code, gotToken, code, token)
				}
				if code == Granted {
					if gotToken <= lastGrant {
						t.Fatalf("index %d: granted token %d after %d", index, gotToken, lastGrant)
					}
					lastGrant = gotToken
				}
				counts[code]++
			}
			for i, e := range randomLog(seed, 2000) {
				index := uint64(i + 1)
				cmd, err := Decode(e.data)
				if err != nil {
					t.Fatalf("index %d: %v", index, err)
				}
				out := m.Apply(&raft.Log{Index: index, Term: e.term, Type: raft.LogCommand, Data: e.data})
				if b, ok := cmd.(Batch); ok {
					rs := out.([]Result)
					for j, sub := range b.Commands {
						check(index, sub, rs[j])
					}
				} else {
					check(index, cmd, out.(Result))
				}
			}
			// The log must exercise every outcome, or the comparison is weak.
			for code := Granted; code <= Done; code++ {
				if counts[code] == 0 {
					t.Errorf("no %v outcome in the log", code)
				}
			}
			if m.LastToken() != md.last || m.EstablishedTerm() != md.term {
				t.Errorf("LastToken %d, EstablishedTerm %d; model %d, %d", m.LastToken(), m.EstablishedTerm(), md.last, md.term)
			}
		})
	}
}

// TestSameLogSameSnapshot: replicas that apply the same log write byte-
// identical snapshots, every time they write one.
func TestSameLogSameSnapshot(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprintf("seed %d", seed), func(t *testing.T) {
			log := randomLog(seed, 3000)
			a, b := replay(t, log), replay(t, log)
			want := a.snapshotBytes()
			if n, _ := a.List(Filter{}); len(n) < 150 {
				t.Fatalf("only %d keys: too few to exercise map order", len(n))
			}
			for i := 0; i < 10; i++ {
				if got := b.snapshotBytes(); !bytes.Equal(got, want) {
					t.Fatalf("run %d: replica b's snapshot differs from a's", i)
				}
				if got := persist(t, a); !bytes.Equal(got, want) {
					t.Fatalf("run %d: Persist differs from snapshotBytes", i)
				}
			}
		})
	}
}

// TestSnapshotIgnoresMapOrder builds machines whose lease maps hold the same
// leases, inserted in different orders into maps of different sizes, and
// checks that they write the same snapshot.
func TestSnapshotIgnoresMapOrder(t *testing.T) {
	orig := replay(t, randomLog(7, 3000))
	want := orig.snapshotBytes()
	leases, _ := orig.List(Filter{})
	applied, term, leaseIndex := orig.Indexes()
	r := rand.New(rand.NewPCG(7, 7))
	for trial := 0; trial < 20; trial++ {
		m := New()
		m.leases = make(map[string]*Lease, trial*50)
		for _, i := range r.Perm(len(leases)) {
			m.leases[leases[i].Key] = leases[i]
		}
		m.lastToken, m.establishedTerm = orig.LastToken(), orig.EstablishedTerm()
		m.appliedIndex, m.appliedTerm, m.leaseIndex = applied, term, leaseIndex
		if got := m.snapshotBytes(); !bytes.Equal(got, want) {
			t.Fatalf("trial %d: snapshot depends on map insertion order", trial)
		}
	}
}

// TestDifferentLogsSameSnapshot: logs that differ only in ways that cannot
// matter (order of independent frees within one entry, a refused acquire
// instead of an ignored entry) leave byte-identical snapshots.
func TestDifferentLogsSameSnapshot(t *testing.T) {
	const n = 100
	acquireAll := make([]Command, n)
	releaseUp := make([]Command, n)
	releaseDown := make([]Command, n)
	for i := 0; i < n; i++ {
		key := fmt.Sprintf("k%03d", i)
		acquireAll[i] = Acquire{Key: key, Holder: "w", TTL: ttl, Metadata: map[string]string{"i": fmt.Sprint(i)}}
		releaseUp[i] = Release{Key: key, Holder: "w", Token: uint64(i + 1)}
		releaseDown[n-1-i] = releaseUp[i]
	}
	enc := func(cmds ...Command) []entry {
		log := make([]entry, len(cmds))
		for i, c := range cmds {
			log[i] = entry{term: 1, data: Encode(c)}
		}
		return log
	}
	tests := []struct {
		name string
		a, b []entry
	}{
		{
			name: "releases in opposite orders within one entry",
			a:    enc(Batch{Commands: acquireAll}, Batch{Commands: releaseUp}),
			b:    enc(Batch{Commands: acquireAll}, Batch{Commands: releaseDown}),
		},
		{
			name: "revokes in opposite orders within one entry",
			a:    enc(acquire("a", "w1"), acquire("b", "w2"), Batch{Commands: []Command{Revoke{Key: "a"}, Revoke{Key: "b"}}}),
			b:    enc(acquire("a", "w1"), acquire("b", "w2"), Batch{Commands: []Command{Revoke{Key: "b"}, Revoke{Key: "a"}}}),
		},
		{
			name: "a refused acquire and an ignored entry",
			a:    enc(acquire("a", "w1"), acquire("a", "w2")),
			b:    append(enc(acquire("a", "w1")), entry{term: 1, data: []byte{0x99, 1, 7}}),
		},
		{
			name: "a stale leader established and a failed release",
			a:    enc(LeaderEstablished{Term: 3}, acquire("a", "w1"), LeaderEstablished{Term: 2}),
			b:    enc(LeaderEstablished{Term: 3}, acquire("a", "w1"), Release{Key: "a", Holder: "w1", Token: 9}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := replay(t, tt.a).snapshotBytes(), replay(t, tt.b).snapshotBytes()
			if !bytes.Equal(a, b) {
				t.Errorf("snapshots differ:\na %x\nb %x", a, b)
			}
		})
	}
}
