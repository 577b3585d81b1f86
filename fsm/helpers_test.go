package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// ttl and wall are the defaults of the acquisitions built by acquire.
const (
	ttl  = 10 * time.Second
	wall = int64(1_763_719_200_000_000_000) // 2025-11-21T10:00:00Z
)

// acquire is an Acquire with the default TTL and wall clock and no metadata.
func acquire(key, holder string) Acquire {
	return Acquire{Key: key, Holder: holder, TTL: ttl, Time: wall}
}

// restoredFrom returns a new Machine restored from the snapshot data.
func restoredFrom(t testing.TB, data []byte) *Machine {
	t.Helper()
	m := New()
	if err := m.Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	return m
}

// restoredBackup prepares backup for a restore at to, as a restore does,
// and returns a new Machine restored from the result.
func restoredBackup(t testing.TB, backup []byte, to RestoreTarget) *Machine {
	t.Helper()
	out, _, err := PrepareRestore(backup, to)
	if err != nil {
		t.Fatal(err)
	}
	return restoredFrom(t, out)
}

// PrepareRestore checks backup b and encodes it again for a restore
// into a running cluster (see RestoreTarget), as a restore does
// (ReadBackup, BackupFile.Prepare). It returns the new snapshot and what
// the original held.
func PrepareRestore(b []byte, to RestoreTarget) ([]byte, SnapshotInfo, error) {
	bk, err := ReadBackup(b)
	if err != nil {
		return nil, SnapshotInfo{}, err
	}
	out, _, err := bk.Prepare(to)
	return out, bk.Info, err
}

// snapshotBytes encodes the current state as Persist would.
func (m *Machine) snapshotBytes() []byte {
	s, _ := m.Snapshot()
	snap := s.(*snapshot)
	return encodeSnapshot(snap.state, snap.index, snap.term)
}

// EstablishedTerm is the term of the last LeaderEstablished applied.
func (m *Machine) EstablishedTerm() uint64 {
	return rlocked(m, func() uint64 { return m.establishedTerm })
}

// ACLBootstrapped reports whether the ACL system has been bootstrapped.
func (m *Machine) ACLBootstrapped() bool {
	return rlocked(m, func() bool { return m.acl.bootstrapped })
}

// node feeds a Machine the way Raft does: one committed entry per call,
// with indexes that grow by one from 1, in the node's current term.
type node struct {
	t     testing.TB
	m     *Machine
	index uint64
	term  uint64
}

func newNode(t testing.TB) *node {
	t.Helper()
	return &node{t: t, m: New(), term: 1}
}

// applyRaw applies data as the next log entry.
func (n *node) applyRaw(data []byte) interface{} {
	n.index++
	return n.m.Apply(&raft.Log{Index: n.index, Term: n.term, Type: raft.LogCommand, Data: data})
}

// one applies a single command and returns its Result.
func (n *node) one(c Command) Result {
	n.t.Helper()
	out := n.applyRaw(Encode(c))
	r, ok := out.(Result)
	if !ok {
		n.t.Fatalf("Apply(%T) returned %T, want Result", c, out)
	}
	return r
}

// batch applies the commands as one Batch entry and returns its results.
func (n *node) batch(cmds ...Command) []Result {
	n.t.Helper()
	out := n.applyRaw(Encode(Batch{Commands: cmds}))
	rs, ok := out.([]Result)
	if !ok {
		n.t.Fatalf("Apply(Batch) returned %T, want []Result", out)
	}
	return rs
}

// all applies each command as its own entry and ignores the results.
func (n *node) all(cmds ...Command) {
	n.t.Helper()
	for _, c := range cmds {
		n.applyRaw(Encode(c))
	}
}

// entry is one committed Raft log entry.
type entry struct {
	term uint64
	data []byte
}

// replay applies log to a new Machine at indexes 1, 2, …
func replay(t testing.TB, log []entry) *Machine {
	t.Helper()
	m := New()
	for i, e := range log {
		m.Apply(&raft.Log{Index: uint64(i + 1), Term: e.term, Type: raft.LogCommand, Data: e.data})
	}
	return m
}

// mustPanic runs f and returns what it panicked with; it fails the test if
// f returns normally.
func mustPanic(t *testing.T, f func()) (v interface{}) {
	t.Helper()
	defer func() { v = recover() }()
	f()
	t.Fatal("did not panic")
	return nil
}

// rawBatch builds a Batch entry from already encoded entries, so that a test
// can put bytes in a batch that Encode would refuse to write.
func rawBatch(entries ...[]byte) []byte {
	e := &encoder{}
	e.byte(byte(TypeBatch))
	e.byte(version1)
	e.uvarint(uint64(len(entries)))
	for _, raw := range entries {
		e.bytes(raw)
	}
	return e.buf
}

// rawBy builds a By entry around already encoded bytes.
func rawBy(accessor string, inner []byte) []byte {
	e := &encoder{}
	e.byte(byte(TypeBy))
	e.byte(version1)
	e.string(accessor)
	e.bytes(inner)
	return e.buf
}

// unusedType is a command type byte that no build assigns: the known types
// are small numbers from 1 upwards (numbers are handed out in ranges, so
// there may be gaps), and this one lies far above them and below
// IgnorableFlag. It must never become a command type; pick another
// one here if it ever does.
const unusedType Type = 0x3f

// view is everything a reader can observe of a Machine, for comparisons.
type view struct {
	Leases          []*Lease
	ListIndex       uint64
	LastToken       uint64
	EstablishedTerm uint64
	Applied, Term   uint64
	LeaseIndex      uint64
	Placement       placement
	// ACL is the ACL state in aclString's form.
	ACL string
}

func viewOf(m *Machine) view {
	var v view
	v.Leases, v.ListIndex = m.List(Filter{})
	v.LastToken = m.LastToken()
	v.EstablishedTerm = m.EstablishedTerm()
	v.Applied, v.Term, v.LeaseIndex = m.Indexes()
	v.Placement = placementOf(m)
	v.ACL = aclString(aclOf(m))
	return v
}

// aclOf copies the ACL state of m under its lock.
func aclOf(m *Machine) aclState {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.acl.snapshot()
}

// aclString renders an ACL state in a stable order, for comparisons and
// failure messages.
func aclString(a aclState) string {
	var b strings.Builder
	fmt.Fprintf(&b, "acl bootstrapped %v index %d", a.bootstrapped, a.index)
	for _, n := range sortedKeysOf(a.policies) {
		p := a.policies[n]
		fmt.Fprintf(&b, "\n  policy %q %q rules %+v create %d modify %d", p.Name, p.Description, p.Rules, p.CreateIndex, p.ModifyIndex)
	}
	for _, id := range sortedKeysOf(a.tokens) {
		t := a.tokens[id]
		fmt.Fprintf(&b, "\n  token %+v (by hash: %q)", *t, a.byHash[t.SecretHash])
	}
	if len(a.byHash) != len(a.tokens) {
		fmt.Fprintf(&b, "\n  %d hashes for %d tokens", len(a.byHash), len(a.tokens))
	}
	for _, w := range sortedKeysOf(a.workers) {
		fmt.Fprintf(&b, "\n  worker %+v", *a.workers[w])
	}
	return b.String()
}

// placement is what a reader can observe of the placement state: groups,
// key controls, drained workers and the group index.
type placement struct {
	Groups   []*Group
	Controls map[string]KeyControl
	Drained  []string
	Index    uint64
}

// placementOf reads the placement state of m. The machine has no method
// that lists the key controls, so they are copied under its lock.
func placementOf(m *Machine) placement {
	var p placement
	p.Groups, p.Index = m.Groups()
	p.Drained = m.DrainedWorkers()
	m.mu.RLock()
	defer m.mu.RUnlock()
	p.Controls = make(map[string]KeyControl, len(m.controls))
	for k, c := range m.controls {
		p.Controls[k] = c
	}
	return p
}

// placementOfState is the placement a Machine restored from st shows.
func placementOfState(st state) placement {
	p := placement{
		Groups:   append([]*Group{}, st.groups...),
		Controls: make(map[string]KeyControl, len(st.controls)),
		Drained:  append([]string{}, st.drained...),
		Index:    st.groupIndex,
	}
	for k, c := range st.controls {
		p.Controls[k] = c
	}
	return p
}

func (p placement) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "{group_index %d drained %q}", p.Index, p.Drained)
	for _, g := range p.Groups {
		fmt.Fprintf(&b, "\n  group %s", groupString(g))
	}
	keys := make([]string, 0, len(p.Controls))
	for k := range p.Controls {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  control %q %s", k, controlString(p.Controls[k]))
	}
	return b.String()
}

// groupString formats g; unlike %+v it tells a nil map or slice from an
// empty one.
func groupString(g *Group) string {
	if g == nil {
		return "<nil>"
	}
	return fmt.Sprintf("{Name:%q Keys:%s MaxPerWorker:%d StuckGrace:%v MinWorkers:%d Stuck:%s Assignment:%s CreateIndex:%d ModifyIndex:%d AssignIndex:%d}",
		g.Name, sliceString(g.Keys), g.MaxPerWorker, g.StuckGrace, g.MinWorkers, sliceString(g.Stuck), mapString(g.Assignment), g.CreateIndex, g.ModifyIndex, g.AssignIndex)
}

func controlString(c KeyControl) string {
	return fmt.Sprintf("{Disabled:%t Prohibited:%s}", c.Disabled, sliceString(c.Prohibited))
}

func sliceString(s []string) string {
	if s == nil {
		return "nil"
	}
	return fmt.Sprintf("%q", s)
}

func mapString(m map[string]string) string {
	if m == nil {
		return "nil"
	}
	return fmt.Sprintf("%q", m)
}

// diffPlacement lists the differences between got and want, one per line,
// or returns "" when they are equal.
func diffPlacement(got, want placement) string {
	if reflect.DeepEqual(got, want) {
		return ""
	}
	var b strings.Builder
	if got.Index != want.Index {
		fmt.Fprintf(&b, "group index %d, want %d\n", got.Index, want.Index)
	}
	if !reflect.DeepEqual(got.Drained, want.Drained) {
		fmt.Fprintf(&b, "drained %s, want %s\n", sliceString(got.Drained), sliceString(want.Drained))
	}
	groups := func(p placement) map[string]*Group {
		out := map[string]*Group{}
		for _, g := range p.Groups {
			out[g.Name] = g
		}
		return out
	}
	gotGroups, wantGroups := groups(got), groups(want)
	for _, name := range sortedKeys(mergeKeys(gotGroups, wantGroups)) {
		if g, w := gotGroups[name], wantGroups[name]; !reflect.DeepEqual(g, w) {
			fmt.Fprintf(&b, "group %q:\n   got %s\n  want %s\n", name, groupString(g), groupString(w))
		}
	}
	if (got.Groups == nil) != (want.Groups == nil) {
		fmt.Fprintf(&b, "groups nil %t, want nil %t\n", got.Groups == nil, want.Groups == nil)
	}
	for _, key := range sortedKeys(mergeKeys(got.Controls, want.Controls)) {
		g, gok := got.Controls[key]
		w, wok := want.Controls[key]
		if gok != wok || !reflect.DeepEqual(g, w) {
			fmt.Fprintf(&b, "control %q: got %s (present %t), want %s (present %t)\n", key, controlString(g), gok, controlString(w), wok)
		}
	}
	if (got.Controls == nil) != (want.Controls == nil) {
		fmt.Fprintf(&b, "controls nil %t, want nil %t\n", got.Controls == nil, want.Controls == nil)
	}
	if b.Len() == 0 {
		b.WriteString("differs in the order of its groups\n")
	}
	return b.String()
}

func mergeKeys[V any](a, b map[string]V) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// cloneGroup returns a deep copy of g, to compare against later.
func cloneGroup(g *Group) *Group {
	c := *g
	c.Keys = slices.Clone(g.Keys)
	c.Assignment = maps.Clone(g.Assignment)
	return &c
}

// leaseState is a view without the indexes that every applied entry moves:
// what a command that changes nothing must leave alone.
func leaseState(m *Machine) ([]*Lease, uint64, uint64) {
	leases, index := m.List(Filter{})
	return leases, index, m.LastToken()
}

func assertView(t *testing.T, got, want view) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("state differs:\ngot  %s\nwant %s\n%s", dump(got), dump(want), diffPlacement(got.Placement, want.Placement))
	}
}

func dump(v view) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{last_token %d established_term %d applied %d term %d lease_index %d list_index %d}",
		v.LastToken, v.EstablishedTerm, v.Applied, v.Term, v.LeaseIndex, v.ListIndex)
	for _, l := range v.Leases {
		fmt.Fprintf(&b, "\n  %s", leaseString(l))
	}
	fmt.Fprintf(&b, "\nplacement %s\n%s", v.Placement, v.ACL)
	return b.String()
}

func leaseString(l *Lease) string {
	if l == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%+v", *l)
}

// fakeSink is a raft.SnapshotSink that keeps what is written in memory.
type fakeSink struct {
	bytes.Buffer
	writeErr  error
	closeErr  error
	closed    bool
	cancelled bool
}

func (s *fakeSink) Write(p []byte) (int, error) {
	if s.writeErr != nil {
		return 0, s.writeErr
	}
	return s.Buffer.Write(p)
}

func (s *fakeSink) ID() string { return "fake" }

func (s *fakeSink) Close() error {
	s.closed = true
	return s.closeErr
}

func (s *fakeSink) Cancel() error {
	s.cancelled = true
	return nil
}

var _ raft.SnapshotSink = (*fakeSink)(nil)

// persist snapshots m through Snapshot and Persist, as Raft does, and
// returns the bytes written.
func persist(t testing.TB, m *Machine) []byte {
	t.Helper()
	snap, err := m.Snapshot()
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	defer snap.Release()
	sink := &fakeSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatalf("Persist: %v", err)
	}
	if !sink.closed || sink.cancelled {
		t.Fatalf("Persist left the sink closed=%t cancelled=%t, want closed and not cancelled", sink.closed, sink.cancelled)
	}
	return sink.Bytes()
}

// trackingReader is the io.ReadCloser that Restore gets; it records Close.
type trackingReader struct {
	r      io.Reader
	closed bool
}

func (r *trackingReader) Read(p []byte) (int, error) { return r.r.Read(p) }
func (r *trackingReader) Close() error               { r.closed = true; return nil }

// failingReader fails after handing out its data.
type failingReader struct {
	data []byte
	err  error
}

func (r *failingReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

var errDisk = errors.New("disk on fire")

// isClosed reports whether ch is closed, without blocking.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// logEntry is the raft.Log that carries c at index in term.
func logEntry(index, term uint64, c Command) *raft.Log {
	return &raft.Log{Index: index, Term: term, Type: raft.LogCommand, Data: Encode(c)}
}
