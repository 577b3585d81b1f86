package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"reflect"
	"strings"
	"testing"
)

func TestSnapshotRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		log  []entry
	}{
		{name: "empty", log: nil},
		{name: "only a leader established", log: []entry{{term: 4, data: Encode(LeaderEstablished{Term: 4})}}},
		{name: "held and free leases with metadata", log: goldenLog()},
		{name: "random log of 3000 entries", log: randomLog(1, 3000)},
		{name: "leases and placement", log: goldenLogV2()},
		{name: "only placement", log: encodeLog([]termCommand{
			{1, GroupPut{Name: "g", Keys: []string{"b", "a"}, MaxPerWorker: 1}},
			{1, Assign{Group: "g", Assignment: map[string]string{"a": "w1"}}},
			{1, GroupPut{Name: "empty"}},
			{1, SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}}},
			{1, WorkerDrain{Worker: "w1", Draining: true}},
		})},
		{name: "groups without assignments", log: encodeLog([]termCommand{
			{1, GroupPut{Name: "g", Keys: []string{"a"}}},
			{1, Assign{Group: "g", Assignment: map[string]string{"x": "w1"}}},
			{1, GroupPut{Name: "h", Keys: []string{"a"}}},
			{1, GroupKeys{Name: "h", Add: []string{"b"}}},
			{1, GroupPut{Name: "h", Keys: []string{"b"}}},
		})},
		{name: "random log of 3000 entries with placement", log: randomPlacementLog(1, 3000)},
		{name: "leases, placement and ACLs", log: goldenLogV3()},
		{name: "random ACL log of 2000 entries", log: randomACLLog(1, 2000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := replay(t, tt.log)
			b := persist(t, orig)

			restored := New()
			rc := &trackingReader{r: bytes.NewReader(b)}
			if err := restored.Restore(rc); err != nil {
				t.Fatalf("Restore: %v", err)
			}
			if !rc.closed {
				t.Error("Restore did not close its reader")
			}

			assertView(t, viewOf(restored), viewOf(orig))
			groups, _ := orig.Groups()
			for _, g := range groups {
				if got := restored.Group(g.Name); !reflect.DeepEqual(got, g) {
					t.Errorf("Group(%q) = %s, want %s", g.Name, groupString(got), groupString(g))
				}
			}
			for key, ctl := range placementOf(orig).Controls {
				if got := restored.Control(key); !reflect.DeepEqual(got, ctl) {
					t.Errorf("Control(%q) = %s, want %s", key, controlString(got), controlString(ctl))
				}
			}
			leases, _ := orig.List(Filter{})
			var maxToken uint64
			for _, l := range leases {
				if got := restored.Get(l.Key); !reflect.DeepEqual(got, l) {
					t.Errorf("Get(%q) = %s, want %s", l.Key, leaseString(got), leaseString(l))
				}
				maxToken = max(maxToken, l.Token)
			}
			if got, want := restored.snapshotBytes(), orig.snapshotBytes(); !bytes.Equal(got, want) {
				t.Errorf("snapshot of the restored machine differs from the original's")
			}

			// The token counter survives: the next grant is above every token
			// handed out before the snapshot, on any key.
			applied, term, _ := restored.Indexes()
			r := restored.Apply(logEntry(applied+1, term, acquire("new/key", "w-new"))).(Result)
			if r.Code != Granted || r.Lease.Token != orig.LastToken()+1 || r.Lease.Token <= maxToken {
				t.Errorf("first acquire after Restore = %v token %d, want %v token %d (above the largest lease token %d)",
					r.Code, r.Lease.Token, Granted, orig.LastToken()+1, maxToken)
			}
		})
	}
}

// TestSnapshotKeepsDeposedLeaderProtection: a follower that restores a
// snapshot instead of replaying the log still refuses the Expire of a
// deposed leader.
func TestSnapshotKeepsDeposedLeaderProtection(t *testing.T) {
	orig := replay(t, goldenLog()) // established term 3; partitions/2 held under token 6
	restored := restoredFrom(t, persist(t, orig))
	r := restored.Apply(logEntry(15, 3, Expire{Key: "partitions/2", Token: 6, Term: 2})).(Result)
	if r.Code != NotHeld || !restored.Get("partitions/2").Held {
		t.Errorf("Expire from term 2 after Restore = %v, held %t; want %v and still held", r.Code, restored.Get("partitions/2").Held, NotHeld)
	}
}

// TestRestoreReplacesState: Raft requires Restore to discard what the
// machine held before; keys, groups, controls and drain marks missing from
// the snapshot are gone.
func TestRestoreReplacesState(t *testing.T) {
	small := newNode(t)
	small.all(acquire("a", "w1"), GroupPut{Name: "g", Keys: []string{"a"}}, SetKeyControl{Key: "b", Control: KeyControl{Disabled: true}})
	b := persist(t, small.m)

	m := newNode(t)
	m.all(
		acquire("zzz", "w9"),
		GroupPut{Name: "old", Keys: []string{"zzz"}},
		GroupPut{Name: "g", Keys: []string{"zzz"}},
		Assign{Group: "g", Assignment: map[string]string{"zzz": "w9"}},
		SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{"w1"}}},
		WorkerDrain{Worker: "w9", Draining: true},
	)
	if err := m.m.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	assertView(t, viewOf(m.m), viewOf(small.m))
	if l := m.m.Get("zzz"); l != nil {
		t.Errorf("Get(zzz) = %s after Restore of a snapshot without it, want nil", leaseString(l))
	}
	if g := m.m.Group("old"); g != nil {
		t.Errorf("Group(old) = %s after Restore of a snapshot without it, want nil", groupString(g))
	}
	if m.m.Drained("w9") || m.m.Control("a").Prohibits("w1") {
		t.Errorf("drain mark or key control survived a Restore of a snapshot without them")
	}
	if r := m.m.Apply(logEntry(4, 1, acquire("a", "w1"))).(Result); r.Code != Kept {
		t.Errorf("acquire(a, w1) after Restore = %v, want %v", r.Code, Kept)
	}
}

// TestRestoreVersion1DropsPlacement: a server that restores a version 1
// snapshot (written before placement existed) ends with no groups, key
// controls or drain marks, whatever it held before, and its group index is
// 0.
func TestRestoreVersion1DropsPlacement(t *testing.T) {
	v1 := readGolden(t, goldenPath("snapshot-v1.golden"))
	n := newNode(t)
	n.all(
		GroupPut{Name: "g", Keys: []string{"scene-01"}},
		SetKeyControl{Key: "scene-01", Control: KeyControl{Disabled: true}},
		WorkerDrain{Worker: "w1", Draining: true},
	)
	ch := n.m.Changed()
	if err := n.m.Restore(io.NopCloser(bytes.NewReader(v1))); err != nil {
		t.Fatalf("Restore(snapshot-v1.golden): %v", err)
	}
	want := placement{Groups: []*Group{}, Controls: map[string]KeyControl{}, Drained: []string{}}
	assertPlacement(t, n.m, placementOf(n.m), want)
	if !isClosed(ch) {
		t.Error("Changed() not closed by Restore")
	}
	// The placement commands work on the restored machine, and its next
	// snapshot is of the current version.
	m := n.m
	if r := m.Apply(logEntry(15, 3, GroupPut{Name: "g", Keys: []string{"scene-01"}})).(Result); r.Code != Done {
		t.Errorf("GroupPut after Restore = %v, want %v", r.Code, Done)
	}
	if r := m.Apply(logEntry(16, 3, acquire("scene-01", "w1"))).(Result); r.Code != Granted || r.Lease.Token != 7 {
		t.Errorf("acquire(scene-01) after Restore = %v, want %v token 7", r.Code, Granted)
	}
	b := m.snapshotBytes()
	if got := binary.BigEndian.Uint16(b[4:6]); got != snapshotVersion {
		t.Errorf("snapshot after restoring version 1 has version %d, want %d", got, snapshotVersion)
	}
	st, _, _, err := decodeSnapshot(b)
	if err != nil {
		t.Fatalf("decodeSnapshot: %v", err)
	}
	if len(st.groups) != 1 || st.groupIndex != 15 {
		t.Errorf("snapshot after restoring version 1 has %d groups at group index %d, want 1 at 15", len(st.groups), st.groupIndex)
	}
}

// TestRestoreRefusesLowerTokenCounter: tokens are never reused, so a
// snapshot whose counter is behind the machine's is refused.
func TestRestoreRefusesLowerTokenCounter(t *testing.T) {
	old := newNode(t)
	old.one(acquire("a", "w1"))
	b := persist(t, old.m)

	n := newNode(t)
	n.all(acquire("a", "w1"), acquire("b", "w1"), Revoke{Key: "a"})
	before := viewOf(n.m)
	ch := n.m.Changed()

	if err := n.m.Restore(io.NopCloser(bytes.NewReader(b))); err == nil {
		t.Fatal("Restore of a snapshot with token counter 1 into a machine at 2 succeeded")
	}
	assertView(t, viewOf(n.m), before)
	if isClosed(ch) {
		t.Error("Changed() closed by a refused Restore")
	}
}

func TestRestoreClosesChanged(t *testing.T) {
	src := newNode(t)
	src.one(acquire("a", "w1"))
	b := persist(t, src.m)

	m := New()
	ch := m.Changed()
	if err := m.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if !isClosed(ch) {
		t.Error("Changed() not closed by Restore: blocking queries would miss the new state")
	}
	if isClosed(m.Changed()) {
		t.Error("the Changed() channel after Restore is already closed")
	}
}

// TestSnapshotIsPointInTime: Raft calls Persist concurrently with later
// Applies; what it writes is the state when Snapshot was called.
func TestSnapshotIsPointInTime(t *testing.T) {
	n := newNode(t)
	n.all(
		Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: map[string]string{"v": "1"}}, acquire("b", "w1"),
		GroupPut{Name: "g", Keys: []string{"a", "b"}},
		Assign{Group: "g", Assignment: map[string]string{"a": "w1", "b": "w2"}},
		SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{"w3"}}},
		WorkerDrain{Worker: "w2", Draining: true},
	)
	want := n.m.snapshotBytes()
	snap, err := n.m.Snapshot()
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	t.Cleanup(snap.Release)

	n.all(
		Acquire{Key: "a", Holder: "w1", TTL: 2 * ttl, Metadata: map[string]string{"v": "2"}},
		Release{Key: "b", Holder: "w1", Token: 2},
		acquire("b", "w2"),
		acquire("c", "w3"),
		LeaderEstablished{Term: 5},
		Assign{Group: "g", Assignment: map[string]string{"a": "w3"}},
		GroupKeys{Name: "g", Add: []string{"c"}, Remove: []string{"b"}},
		GroupPut{Name: "h", Keys: []string{"c"}},
		GroupDelete{Name: "g"},
		SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}},
		SetKeyControl{Key: "c", Control: KeyControl{Prohibited: []string{"w1"}}},
		WorkerDrain{Worker: "w2"},
		WorkerDrain{Worker: "w1", Draining: true},
	)
	sink := &fakeSink{}
	if err := snap.Persist(sink); err != nil {
		t.Fatalf("Persist: %v", err)
	}
	if !bytes.Equal(sink.Bytes(), want) {
		t.Errorf("Persist wrote the state after later Applies:\n got %x\nwant %x", sink.Bytes(), want)
	}
}

func TestPersistErrors(t *testing.T) {
	errClose := errors.New("rename failed")
	tests := []struct {
		name          string
		sink          *fakeSink
		want          error
		wantCancelled bool
	}{
		{name: "write fails: the sink is cancelled", sink: &fakeSink{writeErr: errDisk}, want: errDisk, wantCancelled: true},
		{name: "close fails", sink: &fakeSink{closeErr: errClose}, want: errClose},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t)
			n.one(acquire("a", "w1"))
			snap, err := n.m.Snapshot()
			if err != nil {
				t.Fatalf("Snapshot: %v", err)
			}
			t.Cleanup(snap.Release)

			err = snap.Persist(tt.sink)
			if !errors.Is(err, tt.want) {
				t.Errorf("Persist = %v, want an error wrapping %q", err, tt.want)
			}
			if tt.sink.cancelled != tt.wantCancelled {
				t.Errorf("sink cancelled = %t, want %t", tt.sink.cancelled, tt.wantCancelled)
			}
		})
	}
}

// withSettings replaces the empty version 4 settings section near the end
// of snap (a count of 0) with section, and fixes the checksum.
func withSettings(snap []byte, section ...byte) []byte {
	// The settings section is the one before the ending leases' (an
	// empty one: 0), the cluster id (an empty one: 0), the secret hashes
	// (none: 0), the backup key (an empty one: 0), the balances (none: 0),
	// the prepares (none: 0) and the checksum.
	c := append(bytes.Clone(snap[:len(snap)-11]), section...)
	return withCRC(append(c, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
}

// withBalances returns snap with section as its balance section, before
// the prepares (none: 0) and the checksum.
func withBalances(snap []byte, section ...byte) []byte {
	c := append(bytes.Clone(snap[:len(snap)-6]), section...)
	return withCRC(append(c, 0, 0, 0, 0, 0))
}

// withPrepares returns snap with section as its prepare section, the last
// before the checksum.
func withPrepares(snap []byte, section ...byte) []byte {
	c := append(bytes.Clone(snap[:len(snap)-5]), section...)
	return withCRC(append(c, 0, 0, 0, 0))
}

// withCRC returns b with its trailing checksum recomputed, so that a test
// reaches the checks behind the checksum.
func withCRC(b []byte) []byte {
	c := bytes.Clone(b)
	binary.BigEndian.PutUint32(c[len(c)-4:], crc32.Checksum(c[:len(c)-4], castagnoli))
	return c
}

// frameSnapshot frames body as a snapshot of format version at index 10,
// term 2, with a valid checksum. body writes the fields as given, without
// the checks and sorting of encodeSnapshot, to build snapshots a correct
// writer never writes.
func frameSnapshot(version uint16, body func(e *encoder)) []byte {
	e := &encoder{}
	e.buf = append(e.buf, snapshotMagic...)
	e.buf = binary.BigEndian.AppendUint16(e.buf, version)
	e.buf = binary.BigEndian.AppendUint64(e.buf, 10)
	e.buf = binary.BigEndian.AppendUint64(e.buf, 2)
	body(e)
	return binary.BigEndian.AppendUint32(e.buf, crc32.Checksum(e.buf, castagnoli))
}

// rawLeases writes the lease part of a snapshot body.
func rawLeases(e *encoder, lastToken uint64, leases []*Lease) {
	e.uvarint(lastToken)
	e.uvarint(0)
	e.uvarint(10)
	e.uvarint(uint64(len(leases)))
	for _, l := range leases {
		l.encode(e)
	}
}

// rawSnapshot is a version 1 snapshot of leases in the order given.
func rawSnapshot(lastToken uint64, leases ...*Lease) []byte {
	return frameSnapshot(1, func(e *encoder) { rawLeases(e, lastToken, leases) })
}

// rawPlacement is the placement part of a version 2 snapshot body, in the
// order given.
type rawPlacement struct {
	index    uint64
	groups   []*Group
	controls []rawControl
	drained  []string
}

type rawControl struct {
	key string
	ctl KeyControl
}

func (p rawPlacement) encode(e *encoder) {
	e.uvarint(p.index)
	e.uvarint(uint64(len(p.groups)))
	for _, g := range p.groups {
		g.encode(e)
	}
	e.uvarint(uint64(len(p.controls)))
	for _, c := range p.controls {
		e.string(c.key)
		e.bool(c.ctl.Disabled)
		e.strings(c.ctl.Prohibited)
	}
	e.strings(p.drained)
}

// rawSnapshotV2 is a version 2 snapshot without leases and with the
// placement part p.
func rawSnapshotV2(p rawPlacement) []byte {
	return frameSnapshot(2, func(e *encoder) {
		rawLeases(e, 0, nil)
		p.encode(e)
	})
}

func TestRestoreCorrupt(t *testing.T) {
	good := persist(t, replay(t, goldenLogV2()))
	patch := func(off int, v ...byte) []byte {
		c := bytes.Clone(good)
		copy(c[off:], v)
		return c
	}
	one := &Lease{Key: "a", Holder: "h", Token: 1, Held: true, ModifyIndex: 10}
	// In rawSnapshot(1, one), one's held flag and reason follow the header,
	// four one-byte varints, "a", "h", the token and the TTL.
	const heldAt = headerLen + 4 + 2 + 2 + 1 + 1
	single := rawSnapshot(1, one)
	if _, _, _, err := decodeSnapshot(single); err != nil {
		t.Fatalf("rawSnapshot(1, one) does not decode: %v", err)
	}
	patchSingle := func(off int, v byte) []byte {
		c := bytes.Clone(single)
		c[off] = v
		return withCRC(c)
	}

	tests := []struct {
		name string
		data []byte
		msg  string // part of the error message: which check refused it
	}{
		{name: "empty", data: nil, msg: "shorter than a header"},
		{name: "header only", data: good[:headerLen], msg: "shorter than a header"},
		{name: "bad magic", data: withCRC(patch(0, 'T', 'N', 'R', 'X')), msg: "magic"},
		{name: "a command instead of a snapshot", data: encodePlain(acquire("a", "w1")), msg: "shorter than a header"},
		{name: "version 10", data: withCRC(patch(4, 0, 10)), msg: "format version 10"},
		{name: "version 0xffff", data: withCRC(patch(4, 0xff, 0xff)), msg: "format version 65535"},
		{name: "a version 2 body under a version 1 header", data: withCRC(patch(4, 0, 1)), msg: "trailing"},
		{name: "a version 1 body under a version 2 header", data: withCRC(func() []byte { c := bytes.Clone(single); c[5] = 2; return c }()), msg: "unexpected end"},
		{name: "version 0", data: withCRC(patch(4, 0, 0)), msg: "format version 0"},
		{name: "flipped bit in the body", data: patch(headerLen+3, good[headerLen+3]^0x10), msg: "checksum"},
		{name: "flipped bit in the index", data: patch(10, good[10]^0x01), msg: "checksum"},
		{name: "flipped bit in the checksum", data: patch(len(good)-1, good[len(good)-1]^0x80), msg: "checksum"},
		{name: "truncated by one byte", data: good[:len(good)-1], msg: "checksum"},
		{name: "truncated in half", data: good[:len(good)/2], msg: "checksum"},
		{name: "trailing byte", data: append(bytes.Clone(good), 0), msg: "checksum"},
		{name: "body truncated under a valid checksum", data: withCRC(append(bytes.Clone(good[:len(good)-10]), 0, 0, 0, 0)), msg: ""},
		{name: "trailing body byte under a valid checksum", data: withCRC(append(append(bytes.Clone(good[:len(good)-4]), 0), 0, 0, 0, 0)), msg: "trailing"},
		{name: "more leases than bytes", data: patchSingle(headerLen+3, 0x7f), msg: "leases in"},
		{name: "leases out of order", data: rawSnapshot(2, &Lease{Key: "b", Token: 1}, &Lease{Key: "a", Token: 2}), msg: "out of order"},
		{name: "duplicate key", data: rawSnapshot(2, &Lease{Key: "a", Token: 1}, &Lease{Key: "a", Token: 2}), msg: "out of order"},
		{name: "token above the counter", data: rawSnapshot(1, &Lease{Key: "a", Token: 2}), msg: "above the counter"},
		{name: "held flag 2", data: patchSingle(heldAt, 2), msg: "held flag"},
		{name: "settings of a group the snapshot lacks", data: withSettings(good, 1, 2, 'z', 'z', 0, 0, 0), msg: "lacks"},
		{name: "stuck workers out of order", data: withSettings(good, 1, 10, 'p', 'a', 'r', 't', 'i', 't', 'i', 'o', 'n', 's', 0, 0, 2, 1, 'b', 1, 'a'), msg: "stuck workers"},
		{name: "more group settings than bytes", data: withSettings(good, 0x7f), msg: "group settings in"},
		{name: "unknown reason", data: patchSingle(heldAt+1, 6), msg: "reason"},
		// A balance: by load, threshold, budget, interval, max moving (all
		// zero here), then the weights.
		{name: "balance of a group the snapshot lacks", data: withBalances(good, 1, 2, 'z', 'z', 1, 0, 0, 0, 0, 0), msg: "unknown group"},
		{name: "weights out of order", data: withBalances(good, 1, 10, 'p', 'a', 'r', 't', 'i', 't', 'i', 'o', 'n', 's', 1, 0, 0, 0, 0, 2, 1, 'b', 0, 1, 'a', 0), msg: "out of order"},
		{name: "prepares of a group the snapshot lacks", data: withPrepares(good, 1, 2, 'z', 'z', 1, 1, 'q', 1, 'w'), msg: "unknown group"},
		{name: "prepares of a key the group lacks", data: withPrepares(good, 1, 10, 'p', 'a', 'r', 't', 'i', 't', 'i', 'o', 'n', 's', 1, 1, 'q', 1, 'w'), msg: "not in the group"},
		{name: "an empty prepares entry", data: withPrepares(good, 1, 10, 'p', 'a', 'r', 't', 'i', 't', 'i', 'o', 'n', 's', 0), msg: "empty entry"},
		{name: "more prepares than bytes", data: withPrepares(good, 0x7f), msg: "group prepares in"},
		{name: "more weights than bytes", data: withBalances(good, 1, 10, 'p', 'a', 'r', 't', 'i', 't', 'i', 'o', 'n', 's', 1, 0, 0, 0, 0, 0x7f), msg: "weights in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertRestoreRefused(t, tt.data, tt.msg)
		})
	}
}

// assertRestoreRefused restores data into a machine with leases and
// placement state and checks that Restore fails with ErrBadSnapshot and an
// error that mentions msg, and leaves everything as it was.
func assertRestoreRefused(t *testing.T, data []byte, msg string) {
	t.Helper()
	n := newNode(t)
	n.all(
		Acquire{Key: "keep", Holder: "w1", TTL: ttl, Metadata: map[string]string{"m": "1"}},
		LeaderEstablished{Term: 1},
		GroupPut{Name: "keep", Keys: []string{"keep", "k2"}},
		Assign{Group: "keep", Assignment: map[string]string{"keep": "w1"}},
		SetKeyControl{Key: "k2", Control: KeyControl{Disabled: true}},
		WorkerDrain{Worker: "w2", Draining: true},
	)
	before, beforeBytes := viewOf(n.m), n.m.snapshotBytes()
	ch := n.m.Changed()
	rc := &trackingReader{r: bytes.NewReader(data)}

	err := n.m.Restore(rc)

	if !errors.Is(err, ErrBadSnapshot) {
		t.Fatalf("Restore = %v, want an error wrapping %q", err, ErrBadSnapshot)
	}
	if !strings.Contains(err.Error(), msg) {
		t.Errorf("Restore = %q, want it to mention %q", err, msg)
	}
	assertView(t, viewOf(n.m), before)
	if !bytes.Equal(n.m.snapshotBytes(), beforeBytes) {
		t.Error("a failed Restore changed the snapshot bytes")
	}
	if isClosed(ch) {
		t.Error("Changed() closed by a failed Restore")
	}
	if !rc.closed {
		t.Error("Restore did not close its reader")
	}
}

func TestRestoreCorruptPlacement(t *testing.T) {
	g := func(name string) *Group {
		return &Group{Name: name, Keys: []string{"k"}, CreateIndex: 1, ModifyIndex: 1}
	}
	valid := rawPlacement{
		index:    3,
		groups:   []*Group{g("a"), g("b")},
		controls: []rawControl{{"k", KeyControl{Disabled: true, Prohibited: []string{"w1"}}}},
		drained:  []string{"w1"},
	}
	if _, _, _, err := decodeSnapshot(rawSnapshotV2(valid)); err != nil {
		t.Fatalf("the valid raw placement does not decode: %v", err)
	}
	// In rawSnapshotV2(valid) the placement part starts after the header
	// and four one-byte varints; the disabled flag of the one control
	// follows the index, two groups of 2+3+1+1+3 bytes, the control count
	// and the key.
	const placementAt = headerLen + 4
	const disabledAt = placementAt + 1 + 1 + 2*10 + 1 + 2
	patchValid := func(off int, v byte) []byte {
		c := rawSnapshotV2(valid)
		if c[off] != 1 {
			t.Fatalf("byte %d of the valid snapshot is %d, not the disabled flag", off, c[off])
		}
		c[off] = v
		return withCRC(c)
	}
	with := func(f func(p *rawPlacement)) []byte {
		p := valid
		f(&p)
		return rawSnapshotV2(p)
	}
	good := persist(t, replay(t, goldenLogV2()))
	body := good[:len(good)-4]

	tests := []struct {
		name string
		data []byte
		msg  string
	}{
		{name: "groups out of order", data: with(func(p *rawPlacement) { p.groups = []*Group{g("b"), g("a")} }), msg: `group "a" out of order`},
		{name: "duplicate group", data: with(func(p *rawPlacement) { p.groups = []*Group{g("a"), g("a")} }), msg: `group "a" out of order`},
		{name: "key controls out of order", data: with(func(p *rawPlacement) {
			p.controls = []rawControl{{"b", KeyControl{Disabled: true}}, {"a", KeyControl{Disabled: true}}}
		}), msg: "out of order"},
		{name: "duplicate key control", data: with(func(p *rawPlacement) {
			p.controls = []rawControl{{"a", KeyControl{Disabled: true}}, {"a", KeyControl{Prohibited: []string{"w1"}}}}
		}), msg: "out of order"},
		{name: "drained workers out of order", data: with(func(p *rawPlacement) { p.drained = []string{"w2", "w1"} }), msg: "out of order"},
		{name: "duplicate drained worker", data: with(func(p *rawPlacement) { p.drained = []string{"w1", "w1"} }), msg: "out of order"},
		{name: "group keys out of order", data: with(func(p *rawPlacement) {
			p.groups = []*Group{{Name: "a", Keys: []string{"k2", "k1"}}}
		}), msg: "out of order"},
		{name: "prohibited holders out of order", data: with(func(p *rawPlacement) {
			p.controls = []rawControl{{"k", KeyControl{Prohibited: []string{"w2", "w1"}}}}
		}), msg: "out of order"},
		{name: "disabled flag 2", data: patchValid(disabledAt, 2), msg: "bool byte 2"},
		{name: "disabled flag 0xff", data: patchValid(disabledAt, 0xff), msg: "bool byte 255"},
		{name: "more groups than bytes", data: withCRC(func() []byte { c := rawSnapshotV2(valid); c[placementAt+1] = 0x7f; return c }()), msg: "groups in"},
		{name: "more key controls than bytes", data: withCRC(func() []byte {
			c := rawSnapshotV2(valid)
			c[placementAt+2+20] = 0x7f
			return c
		}()), msg: "key controls in"},
		{name: "group with more keys than bytes", data: withCRC(func() []byte { c := rawSnapshotV2(valid); c[placementAt+4] = 0x7f; return c }()), msg: "list of 127 strings"},
		{name: "no placement part", data: frameSnapshot(2, func(e *encoder) { rawLeases(e, 0, nil) }), msg: "unexpected end"},
		{name: "placement part without drained workers", data: withCRC(append(bytes.Clone(body[:len(body)-9]), 0, 0, 0, 0)), msg: "unexpected end"},
		{name: "placement part cut inside a group", data: frameSnapshot(2, func(e *encoder) {
			rawLeases(e, 0, nil)
			e.uvarint(3)
			e.uvarint(1)
			e.string("a")
			e.strings([]string{"k"})
		}), msg: "unexpected end"},
		{name: "trailing byte after the drained workers", data: frameSnapshot(2, func(e *encoder) {
			rawLeases(e, 0, nil)
			valid.encode(e)
			e.byte(0)
		}), msg: "trailing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertRestoreRefused(t, tt.data, tt.msg)
		})
	}
}

// TestRestoreRefusesEveryTruncation: every field of a snapshot body is
// required, so no proper prefix of a body is a snapshot, even under a valid
// checksum. The golden log's body ends with a placement part of every
// kind.
func TestRestoreRefusesEveryTruncation(t *testing.T) {
	good := persist(t, replay(t, goldenLogV2()))
	body := good[:len(good)-4]
	for cut := headerLen; cut < len(body); cut++ {
		data := binary.BigEndian.AppendUint32(bytes.Clone(body[:cut]), crc32.Checksum(body[:cut], castagnoli))
		if _, _, _, err := decodeSnapshot(data); !errors.Is(err, ErrBadSnapshot) {
			t.Errorf("body cut to %d of %d bytes: decodeSnapshot = %v, want an error wrapping %q", cut, len(body), err, ErrBadSnapshot)
		}
	}
}

func TestRestoreReadError(t *testing.T) {
	good := persist(t, replay(t, goldenLog()))
	m := New()
	err := m.Restore(io.NopCloser(&failingReader{data: good[:20], err: errDisk}))
	if !errors.Is(err, ErrBadSnapshot) || !errors.Is(err, errDisk) {
		t.Errorf("Restore = %v, want an error wrapping %q and %q", err, ErrBadSnapshot, errDisk)
	}
	if m.LastToken() != 0 || m.Get("partitions/2") != nil {
		t.Error("a failed Restore changed the state")
	}
}
