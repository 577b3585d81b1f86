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
	restored := New()
	if err := restored.Restore(io.NopCloser(bytes.NewReader(persist(t, orig)))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	r := restored.Apply(logEntry(15, 3, Expire{Key: "partitions/2", Token: 6, Term: 2})).(Result)
	if r.Code != NotHeld || !restored.Get("partitions/2").Held {
		t.Errorf("Expire from term 2 after Restore = %v, held %t; want %v and still held", r.Code, restored.Get("partitions/2").Held, NotHeld)
	}
}

// TestRestoreReplacesState: Raft requires Restore to discard what the
// machine held before; keys missing from the snapshot are gone.
func TestRestoreReplacesState(t *testing.T) {
	small := newNode(t)
	small.one(acquire("a", "w1"))
	b := persist(t, small.m)

	m := New()
	m.Apply(logEntry(1, 1, acquire("zzz", "w9")))
	if err := m.Restore(io.NopCloser(bytes.NewReader(b))); err != nil {
		t.Fatalf("Restore: %v", err)
	}
	assertView(t, viewOf(m), viewOf(small.m))
	if l := m.Get("zzz"); l != nil {
		t.Errorf("Get(zzz) = %s after Restore of a snapshot without it, want nil", leaseString(l))
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
	n.all(Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: map[string]string{"v": "1"}}, acquire("b", "w1"))
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

// withCRC returns b with its trailing checksum recomputed, so that a test
// reaches the checks behind the checksum.
func withCRC(b []byte) []byte {
	c := bytes.Clone(b)
	binary.BigEndian.PutUint32(c[len(c)-4:], crc32.Checksum(c[:len(c)-4], castagnoli))
	return c
}

// rawSnapshot frames leases in the order given, without the checks and
// sorting of encodeSnapshot, to build snapshots a correct writer never
// writes.
func rawSnapshot(lastToken uint64, leases ...*Lease) []byte {
	e := &encoder{}
	e.buf = append(e.buf, snapshotMagic...)
	e.buf = binary.BigEndian.AppendUint16(e.buf, snapshotVersion)
	e.buf = binary.BigEndian.AppendUint64(e.buf, 10)
	e.buf = binary.BigEndian.AppendUint64(e.buf, 2)
	e.uvarint(lastToken)
	e.uvarint(0)
	e.uvarint(10)
	e.uvarint(uint64(len(leases)))
	for _, l := range leases {
		l.encode(e)
	}
	return binary.BigEndian.AppendUint32(e.buf, crc32.Checksum(e.buf, castagnoli))
}

func TestRestoreCorrupt(t *testing.T) {
	good := persist(t, replay(t, goldenLog()))
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
		{name: "a command instead of a snapshot", data: Encode(acquire("a", "w1")), msg: "shorter than a header"},
		{name: "version 2", data: withCRC(patch(4, 0, 2)), msg: "format version 2"},
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
		{name: "unknown reason", data: patchSingle(heldAt+1, 4), msg: "reason"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t)
			n.all(Acquire{Key: "keep", Holder: "w1", TTL: ttl, Metadata: map[string]string{"m": "1"}}, LeaderEstablished{Term: 1})
			before, beforeBytes := viewOf(n.m), n.m.snapshotBytes()
			ch := n.m.Changed()
			rc := &trackingReader{r: bytes.NewReader(tt.data)}

			err := n.m.Restore(rc)

			if !errors.Is(err, ErrBadSnapshot) {
				t.Fatalf("Restore = %v, want an error wrapping %q", err, ErrBadSnapshot)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("Restore = %q, want it to mention %q", err, tt.msg)
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
		})
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
