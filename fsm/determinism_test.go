package fsm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// model is the lease contract of DESIGN.md in its plainest form, with the
// placement state beside it. The Machine must reach the same outcome and
// token on every command, and the same placement state.
type model struct {
	leases map[string]*modelLease
	last   uint64 // last token handed out
	term   uint64 // last established term

	disabled   map[string]bool
	prohibited map[string]map[string]bool // key → holders
	drained    map[string]bool
	groups     map[string]*modelGroup
}

type modelGroup struct {
	keys   map[string]bool
	max    int
	assign map[string]string
}

type modelLease struct {
	holder string
	token  uint64
	held   bool
	// ending: an operator ended it; held, but never kept again.
	ending bool
}

func newModel() *model {
	return &model{
		leases:     map[string]*modelLease{},
		disabled:   map[string]bool{},
		prohibited: map[string]map[string]bool{},
		drained:    map[string]bool{},
		groups:     map[string]*modelGroup{},
	}
}

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
		case md.disabled[c.Key]:
			return Disabled, tok(l)
		case md.prohibited[c.Key][c.Holder]:
			return Prohibited, tok(l)
		case l != nil && l.held && l.holder == c.Holder && !l.ending:
			return Kept, l.token
		case l != nil && l.held:
			return Held, l.token
		}
		md.last++
		md.leases[c.Key] = &modelLease{holder: c.Holder, token: md.last, held: true}
		return Granted, md.last
	case Release:
		l := md.leases[c.Key]
		switch {
		case l == nil || c.Token < l.token:
			return NotHeld, tok(l)
		case c.Token > l.token || l.holder != c.Holder:
			return NotHolder, l.token
		case !l.held:
			return NotHeld, l.token
		}
		l.held, l.ending = false, false
		return Freed, l.token
	case Expire:
		l := md.leases[c.Key]
		if l == nil || !l.held || l.token != c.Token || c.Term < md.term {
			return NotHeld, tok(l)
		}
		l.held, l.ending = false, false
		return Freed, l.token
	case Revoke:
		l := md.leases[c.Key]
		if l == nil {
			return NotFound, 0
		}
		if !l.held {
			return NotHeld, l.token
		}
		l.held, l.ending = false, false
		return Freed, l.token
	case End:
		if c.Key == "" {
			for _, l := range md.leases {
				if l.held && l.holder == c.Holder {
					l.held, l.ending = !c.Force, !c.Force
				}
			}
			return Done, 0
		}
		l := md.leases[c.Key]
		switch {
		case l == nil:
			return NotFound, 0
		case !l.held || c.Holder != "" && l.holder != c.Holder:
			return NotHeld, l.token
		case c.Force:
			l.held, l.ending = false, false
			return Freed, l.token
		}
		l.ending = true
		return Ending, l.token
	case LeaderEstablished:
		md.term = max(md.term, c.Term)
		return Done, 0
	case GroupPut:
		next := &modelGroup{keys: map[string]bool{}, max: c.MaxPerWorker, assign: map[string]string{}}
		for _, k := range c.Keys {
			next.keys[k] = true
		}
		if cur := md.groups[c.Name]; cur != nil {
			for k, w := range cur.assign {
				if next.keys[k] {
					next.assign[k] = w
				}
			}
		}
		md.groups[c.Name] = next
		return Done, 0
	case GroupDelete:
		if md.groups[c.Name] == nil {
			return NotFound, 0
		}
		delete(md.groups, c.Name)
		return Done, 0
	case GroupSetKeys:
		g := md.groups[c.Name]
		if g == nil {
			return NotFound, 0
		}
		keys := map[string]bool{}
		for _, k := range c.Keys {
			keys[k] = true
		}
		for k := range g.assign {
			if !keys[k] {
				delete(g.assign, k)
			}
		}
		g.keys = keys
		return Done, 0
	case GroupKeys:
		g := md.groups[c.Name]
		if g == nil {
			return NotFound, 0
		}
		for _, k := range c.Add {
			g.keys[k] = true
		}
		for _, k := range c.Remove {
			delete(g.keys, k)
			delete(g.assign, k)
		}
		return Done, 0
	case Assign:
		g := md.groups[c.Group]
		if g == nil {
			return NotFound, 0
		}
		g.assign = map[string]string{}
		for k, w := range c.Assignment {
			if g.keys[k] && w != "" {
				g.assign[k] = w
			}
		}
		return Done, 0
	case SetKeyControl:
		delete(md.disabled, c.Key)
		delete(md.prohibited, c.Key)
		if c.Control.Disabled {
			md.disabled[c.Key] = true
		}
		for _, h := range c.Control.Prohibited {
			if md.prohibited[c.Key] == nil {
				md.prohibited[c.Key] = map[string]bool{}
			}
			md.prohibited[c.Key][h] = true
		}
		if l := md.leases[c.Key]; l != nil && l.held && (md.disabled[c.Key] || md.prohibited[c.Key][l.holder]) {
			l.ending = true
			if c.Force {
				l.held, l.ending = false, false
			}
		}
		return Done, 0
	case WorkerDrain:
		if c.Draining {
			md.drained[c.Worker] = true
		} else {
			delete(md.drained, c.Worker)
		}
		return Done, 0
	}
	panic(fmt.Sprintf("model: %T", c))
}

// placement is the model's placement state as the Machine shows it,
// without the indexes.
func (md *model) placement() placement {
	p := placement{Groups: []*Group{}, Controls: map[string]KeyControl{}, Drained: sortedKeys(md.drained)}
	for _, name := range sortedKeys(md.groups) {
		g := md.groups[name]
		mg := &Group{Name: name, Keys: sortedKeys(g.keys), MaxPerWorker: g.max}
		if len(mg.Keys) == 0 {
			mg.Keys = nil
		}
		if len(g.assign) > 0 {
			mg.Assignment = g.assign
		}
		p.Groups = append(p.Groups, mg)
	}
	for k := range md.disabled {
		p.Controls[k] = KeyControl{Disabled: true}
	}
	for k, hs := range md.prohibited {
		c := p.Controls[k]
		c.Prohibited = sortedKeys(hs)
		p.Controls[k] = c
	}
	return p
}

// withoutIndexes returns p with the indexes of p and its groups cleared,
// for comparison with the model, which keeps none.
func withoutIndexes(p placement) placement {
	out := p
	out.Index = 0
	out.Groups = make([]*Group, len(p.Groups))
	for i, g := range p.Groups {
		c := *g
		c.CreateIndex, c.ModifyIndex, c.AssignIndex = 0, 0, 0
		out.Groups[i] = &c
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
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
	// placement mixes placement commands into the log.
	placement bool
}

// randomLog returns n entries of lease commands generated from seed over
// 200 keys.
func randomLog(seed uint64, n int) []entry { return genLog(seed, n, false) }

// randomPlacementLog is randomLog with placement commands (about a quarter
// of the commands) mixed in.
func randomPlacementLog(seed uint64, n int) []entry { return genLog(seed, n, true) }

func genLog(seed uint64, n int, placement bool) []entry {
	g := &logGen{r: rand.New(rand.NewPCG(seed, seed^0x5eed)), md: newModel(), term: 1, placement: placement}
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
	if g.placement && r.IntN(4) == 0 {
		c := g.placementCommand()
		g.md.apply(c)
		return c
	}
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
	case p < 86:
		if r.IntN(5) == 0 {
			key = fmt.Sprintf("never/%d", r.IntN(10))
		}
		c = Revoke{Key: key}
	case p < 92:
		e := End{Key: key, Force: r.IntN(4) == 0}
		switch r.IntN(6) {
		case 0:
			e.Key, e.Holder = "", holder // every lease of a holder
		case 1:
			e.Holder = holder // only if holder holds it
		}
		c = e
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

// placementCommand returns a random placement command; the caller applies
// it to the model.
func (g *logGen) placementCommand() Command {
	r := g.r
	name := fmt.Sprintf("group-%d", r.IntN(4))
	someKeys := func() []string {
		out := make([]string, r.IntN(6))
		for i := range out {
			out[i] = g.keys[r.IntN(len(g.keys))]
		}
		return out
	}
	// members returns some keys of the group, and sometimes a key outside
	// it.
	members := func() []string {
		var out []string
		if cur := g.md.groups[name]; cur != nil {
			for _, k := range sortedKeys(cur.keys) {
				if r.IntN(3) == 0 {
					out = append(out, k)
				}
			}
		}
		if r.IntN(4) == 0 {
			out = append(out, g.keys[r.IntN(len(g.keys))])
		}
		return out
	}
	switch p := r.IntN(100); {
	case p < 15:
		return GroupPut{Name: name, Keys: append(members(), someKeys()...), MaxPerWorker: r.IntN(4)}
	case p < 22:
		return GroupDelete{Name: name}
	case p < 32:
		return GroupKeys{Name: name, Add: someKeys(), Remove: members()}
	case p < 37:
		// Most of the group's keys stay, with their targets.
		drop := map[string]bool{}
		for _, k := range members() {
			drop[k] = true
		}
		var keys []string
		if cur := g.md.groups[name]; cur != nil {
			for _, k := range sortedKeys(cur.keys) {
				if !drop[k] {
					keys = append(keys, k)
				}
			}
		}
		return GroupSetKeys{Name: name, Keys: append(keys, someKeys()...)}
	case p < 55:
		a := map[string]string{}
		for _, k := range members() {
			a[k] = genHolders[r.IntN(len(genHolders))]
			if r.IntN(10) == 0 {
				a[k] = "" // no owner
			}
		}
		return Assign{Group: name, Assignment: a}
	case p < 82:
		c := SetKeyControl{Key: g.keys[r.IntN(len(g.keys))]}
		if r.IntN(3) > 0 {
			c.Control.Disabled = r.IntN(3) == 0
			for i := r.IntN(3); i > 0; i-- {
				c.Control.Prohibited = append(c.Control.Prohibited, genHolders[r.IntN(len(genHolders))])
			}
		}
		c.Force = r.IntN(5) == 0
		return c
	default:
		return WorkerDrain{Worker: genHolders[r.IntN(len(genHolders))], Draining: r.IntN(3) > 0}
	}
}

// TestRandomLogsMatchModel applies random logs and compares every outcome
// and token with the model, and checks the fencing rule along the way:
// each grant's token is above every earlier token. Logs with placement
// commands must also leave the model's placement state.
func TestRandomLogsMatchModel(t *testing.T) {
	type run struct {
		name string
		log  []entry
		// codes must all occur, or the comparison is weak.
		codes []Code
	}
	var runs []run
	for seed := uint64(1); seed <= 20; seed++ {
		runs = append(runs, run{fmt.Sprintf("seed %d", seed), randomLog(seed, 2000), []Code{Granted, Kept, Held, Freed, NotHeld, NotHolder, NotFound, Done, Ending}})
	}
	for seed := uint64(1); seed <= 10; seed++ {
		runs = append(runs, run{fmt.Sprintf("placement seed %d", seed), randomPlacementLog(seed, 2000),
			[]Code{Granted, Kept, Held, Freed, NotHeld, NotHolder, NotFound, Done, Disabled, Prohibited, Ending}})
	}
	for _, tt := range runs {
		t.Run(tt.name, func(t *testing.T) {
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
			for i, e := range tt.log {
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
			for _, code := range tt.codes {
				if counts[code] == 0 {
					t.Errorf("no %v outcome in the log", code)
				}
			}
			if m.LastToken() != md.last || m.EstablishedTerm() != md.term {
				t.Errorf("LastToken %d, EstablishedTerm %d; model %d, %d", m.LastToken(), m.EstablishedTerm(), md.last, md.term)
			}
			if diff := diffPlacement(withoutIndexes(placementOf(m)), md.placement()); diff != "" {
				t.Errorf("placement differs from the model's:\n%s", diff)
			}
		})
	}
}

// TestSameLogSameSnapshot: replicas that apply the same log write byte-
// identical snapshots, every time they write one.
func TestSameLogSameSnapshot(t *testing.T) {
	type run struct {
		name string
		log  []entry
	}
	var runs []run
	for seed := uint64(1); seed <= 5; seed++ {
		runs = append(runs, run{fmt.Sprintf("seed %d", seed), randomLog(seed, 3000)})
		runs = append(runs, run{fmt.Sprintf("placement seed %d", seed), randomPlacementLog(seed, 3000)})
	}
	for _, tt := range runs {
		t.Run(tt.name, func(t *testing.T) {
			a, b := replay(t, tt.log), replay(t, tt.log)
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

// TestPlacementLogsAreRich guards the placement tests that use
// randomPlacementLog: they compare little unless its logs leave groups
// with assignments, many key controls and drained workers.
func TestPlacementLogsAreRich(t *testing.T) {
	m := replay(t, randomPlacementLog(7, 3000))
	p := placementOf(m)
	assigned := 0
	for _, g := range p.Groups {
		assigned += len(g.Assignment)
	}
	if len(p.Groups) < 2 || assigned < 2 || len(p.Controls) < 20 || len(p.Drained) < 1 {
		t.Errorf("placement log leaves %d groups, %d assigned keys, %d key controls, %d drained workers; want at least 2, 2, 20, 1",
			len(p.Groups), assigned, len(p.Controls), len(p.Drained))
	}
}

// TestSnapshotIgnoresMapOrder builds machines whose maps hold the same
// leases, groups, key controls and drain marks, inserted in different
// orders into maps of different sizes (and into the key index), and checks
// that they write the same snapshot.
func TestSnapshotIgnoresMapOrder(t *testing.T) {
	for _, tt := range []struct {
		name string
		log  []entry
	}{
		{"leases", randomLog(7, 3000)},
		{"leases and placement", randomPlacementLog(7, 3000)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			orig := replay(t, tt.log)
			want := orig.snapshotBytes()
			leases, _ := orig.List(Filter{})
			p := placementOf(orig)
			controls := sortedKeys(p.Controls)
			applied, term, leaseIndex := orig.Indexes()
			r := rand.New(rand.NewPCG(7, 7))
			for trial := 0; trial < 20; trial++ {
				m := New()
				m.leases = make(map[string]*Lease, trial*50)
				for _, i := range r.Perm(len(leases)) {
					m.leases[leases[i].Key] = leases[i]
					m.sorted.put(leases[i]) // the key order, built in another order
				}
				m.groups = make(map[string]*Group, trial)
				for _, i := range r.Perm(len(p.Groups)) {
					m.groups[p.Groups[i].Name] = p.Groups[i]
				}
				m.controls = make(map[string]KeyControl, trial*10)
				for _, i := range r.Perm(len(controls)) {
					m.controls[controls[i]] = p.Controls[controls[i]]
				}
				m.drained = make(map[string]bool, trial)
				for _, i := range r.Perm(len(p.Drained)) {
					m.drained[p.Drained[i]] = true
				}
				m.lastToken, m.establishedTerm = orig.LastToken(), orig.EstablishedTerm()
				m.appliedIndex, m.appliedTerm, m.leaseIndex = applied, term, leaseIndex
				m.groupIndex = p.Index
				if got := m.snapshotBytes(); !bytes.Equal(got, want) {
					t.Fatalf("trial %d: snapshot depends on map insertion order", trial)
				}
			}
		})
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
		{
			name: "group keys in any order, with duplicates",
			a:    enc(GroupPut{Name: "g", Keys: []string{"c", "a", "b", "a"}}),
			b:    enc(GroupPut{Name: "g", Keys: []string{"a", "b", "c"}}),
		},
		{
			name: "keys added by group keys and by group put",
			a:    enc(GroupPut{Name: "g", Keys: []string{"a"}}, GroupKeys{Name: "g", Add: []string{"c", "b"}}),
			b:    enc(GroupPut{Name: "g", Keys: []string{"a"}}, GroupPut{Name: "g", Keys: []string{"b", "c", "a"}}),
		},
		{
			name: "an assignment with keys outside the group and without them",
			a:    enc(GroupPut{Name: "g", Keys: []string{"a", "b"}}, Assign{Group: "g", Assignment: map[string]string{"a": "w1", "x": "w2", "b": ""}}),
			b:    enc(GroupPut{Name: "g", Keys: []string{"a", "b"}}, Assign{Group: "g", Assignment: map[string]string{"a": "w1"}}),
		},
		{
			name: "groups and controls created in opposite orders within one entry",
			a: enc(Batch{Commands: []Command{
				GroupPut{Name: "g1", Keys: []string{"a"}}, GroupPut{Name: "g2", Keys: []string{"b"}},
				SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}}, SetKeyControl{Key: "b", Control: KeyControl{Prohibited: []string{"w2", "w1"}}},
				WorkerDrain{Worker: "w1", Draining: true}, WorkerDrain{Worker: "w2", Draining: true},
			}}),
			b: enc(Batch{Commands: []Command{
				WorkerDrain{Worker: "w2", Draining: true}, WorkerDrain{Worker: "w1", Draining: true},
				SetKeyControl{Key: "b", Control: KeyControl{Prohibited: []string{"w1", "w2", "w1"}}}, SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}},
				GroupPut{Name: "g2", Keys: []string{"b"}}, GroupPut{Name: "g1", Keys: []string{"a"}},
			}}),
		},
		{
			name: "a control set and cleared, and none",
			a:    enc(acquire("a", "w1"), Batch{Commands: []Command{SetKeyControl{Key: "b", Control: KeyControl{Disabled: true}}, SetKeyControl{Key: "b"}, WorkerDrain{Worker: "w1", Draining: true}}}),
			b:    enc(acquire("a", "w1"), WorkerDrain{Worker: "w1", Draining: true}),
		},
		{
			name: "a refused acquire of a disabled key and an ignored entry",
			a:    enc(SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}}, acquire("a", "w1")),
			b:    append(enc(SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}}), entry{term: 1, data: []byte{0x99, 1, 7}}),
		},
		{
			name: "group commands on a missing group and an ignored entry",
			a:    enc(acquire("a", "w1"), Batch{Commands: []Command{GroupKeys{Name: "g", Add: []string{"a"}}, Assign{Group: "g"}, GroupDelete{Name: "g"}}}),
			b:    append(enc(acquire("a", "w1")), entry{term: 1, data: []byte{0x99, 1, 7}}),
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
