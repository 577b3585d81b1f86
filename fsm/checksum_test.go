package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// sealed puts a checksum after b, as Encode does; b's version byte must
// carry envelopeFlag already.
func sealed(b []byte) []byte {
	return binary.BigEndian.AppendUint32(bytes.Clone(b), crc32.Checksum(b, castagnoli))
}

// flipped returns b with the byte at i inverted.
func flipped(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0xff
	return c
}

// damageCommands are entries of the shapes servers write: a lone command,
// one with a map, a batch (group commit), an operator's By, a By inside a
// batch, and entries of a few bytes.
var damageCommands = []namedCommand{
	{"acquire", Acquire{Key: "scene-01", Holder: "tracker-0-4242-1a2b3c4d", TTL: 15 * time.Second, Time: wall}},
	{"acquire-metadata", Acquire{Key: "partitions/17", Holder: "w-a", TTL: ttl, Metadata: map[string]string{"zone": "eu-1"}, Time: wall}},
	{"release", Release{Key: "scene-01", Holder: "tracker-0", Token: 17}},
	{"expire", Expire{Key: "elections/scheduler", Token: 300, Term: 7}},
	{"leader-established", LeaderEstablished{Term: 12}},
	{"empty-batch", Batch{Commands: []Command{}}},
	{"batch", Batch{Commands: []Command{
		Release{Key: "scene-01", Holder: "tracker-0", Token: 17},
		Acquire{Key: "scene-01", Holder: "tracker-1", TTL: ttl, Time: wall},
	}}},
	{"by", By{Accessor: "0d4f3b2a", Cmd: End{Key: "scene-01", Force: true}}},
	{"batch-by", Batch{Commands: []Command{
		By{Accessor: "anonymous", Cmd: SetKeyControl{Key: "scene-01", Control: KeyControl{Disabled: true}}},
		Acquire{Key: "scene-02", Holder: "tracker-1", TTL: ttl, Time: wall},
	}}},
}

// TestEveryDamagedByteIsDetected: one byte of an entry replaced by any
// other value, at any position (type, version, payload, checksum), is
// refused as damaged by Decode and Verify; it never decodes, not to
// another command, not to an entry of the old format, not to Ignored.
func TestEveryDamagedByteIsDetected(t *testing.T) {
	for _, c := range damageCommands {
		t.Run(c.name, func(t *testing.T) {
			good := Encode(c.cmd)
			for i := range good {
				for v := 0; v < 256; v++ {
					if byte(v) == good[i] {
						continue
					}
					bad := bytes.Clone(good)
					bad[i] = byte(v)
					if got, err := Decode(bad); !errors.Is(err, ErrCorrupt) {
						t.Fatalf("byte %d of %d set to %#x: Decode = %#v, %v; want an error wrapping %q", i, len(good), v, got, err, ErrCorrupt)
					}
					if err := Verify(bad); !errors.Is(err, ErrCorrupt) {
						t.Fatalf("byte %d of %d set to %#x: Verify = %v, want an error wrapping %q", i, len(good), v, err, ErrCorrupt)
					}
				}
			}
		})
	}
}

// TestDamagedEntryIsNotApplied: ApplyLog refuses a damaged entry with an
// *EntryError naming its index and changes nothing; Apply panics.
func TestDamagedEntryIsNotApplied(t *testing.T) {
	for _, c := range damageCommands {
		t.Run(c.name, func(t *testing.T) {
			good := Encode(c.cmd)
			for i := range good {
				n := newNode(t)
				n.one(Acquire{Key: "scene-01", Holder: "tracker-0", TTL: ttl, Time: wall})
				before := viewOf(n.m)
				changed := n.m.Changed()
				out, err := n.m.ApplyLog(&raft.Log{Index: 2, Term: 1, Type: raft.LogCommand, Data: flipped(good, i)})
				var ee *EntryError
				if !errors.As(err, &ee) || ee.Index != 2 || !errors.Is(err, ErrCorrupt) {
					t.Fatalf("byte %d inverted: ApplyLog = %v, %v; want an *EntryError of index 2 wrapping %q", i, out, err, ErrCorrupt)
				}
				if out != nil {
					t.Errorf("byte %d inverted: ApplyLog returned %v with its error", i, out)
				}
				assertView(t, viewOf(n.m), before)
				if isClosed(changed) {
					t.Errorf("byte %d inverted: Changed() closed by an entry that was not applied", i)
				}
			}
			mustPanic(t, func() { newNode(t).applyRaw(flipped(good, len(good)/2)) })
		})
	}
}

// TestEnvelopeLayout pins the envelope: type, version 1 with envelopeFlag,
// the payload as entries without an envelope have it, and the CRC-32C of
// everything before it, big endian.
func TestEnvelopeLayout(t *testing.T) {
	for _, c := range goldenCommandsV1 {
		b := Encode(c.cmd)
		plain := encodePlain(c.cmd)
		if b[0] != plain[0] || b[1] != envelopeFlag|version1 || !bytes.Equal(b[2:len(b)-crcLen], plain[2:]) {
			t.Errorf("%s: Encode = %x, want %x with version %#x and a checksum", c.name, b, plain, envelopeFlag|version1)
		}
		if got, want := binary.BigEndian.Uint32(b[len(b)-crcLen:]), crc32.Checksum(b[:len(b)-crcLen], castagnoli); got != want {
			t.Errorf("%s: checksum %08x, want %08x", c.name, got, want)
		}
		if err := Verify(b); err != nil {
			t.Errorf("%s: Verify(Encode(c)) = %v", c.name, err)
		}
		if err := Verify(plain); err != nil {
			t.Errorf("%s: Verify of the old form = %v", c.name, err)
		}
	}
}

// TestEnvelopeErrors: an intact envelope that this build cannot read is
// not called damaged (it was written by a newer build, or a bug); a
// damaged one is.
func TestEnvelopeErrors(t *testing.T) {
	revoke := encodePlain(Revoke{Key: "a"})
	withFlag := func(b []byte) []byte {
		c := bytes.Clone(b)
		c[1] |= envelopeFlag
		return c
	}
	tests := []struct {
		name    string
		data    []byte
		want    error
		corrupt bool
	}{
		{name: "unknown type", data: sealed([]byte{byte(unusedType), envelopeFlag | version1}), want: ErrUnknownType},
		{name: "unknown version", data: sealed([]byte{byte(TypeRevoke), envelopeFlag | 2, 1, 'a'}), want: ErrUnknownVersion},
		{name: "trailing byte under a good checksum", data: sealed(append(withFlag(revoke), 0)), want: ErrMalformed},
		{name: "batch inside holding an envelope", data: sealed(withFlag(rawBatch(Encode(Revoke{Key: "a"})))), want: ErrUnknownVersion},
		{name: "by of an envelope", data: sealed(withFlag(rawBy("a", Encode(Revoke{Key: "a"})))), want: ErrUnknownVersion},
		{name: "too short for a checksum", data: []byte{byte(TypeRevoke), envelopeFlag | version1, 0, 0, 0}, want: ErrCorrupt, corrupt: true},
		{name: "byte appended", data: append(Encode(Revoke{Key: "a"}), 0), want: ErrCorrupt, corrupt: true},
		{name: "last byte cut", data: func() []byte { b := Encode(Revoke{Key: "a"}); return b[:len(b)-1] }(), want: ErrCorrupt, corrupt: true},
		{name: "old form with a byte appended", data: append(bytes.Clone(revoke), 0), want: ErrMalformed, corrupt: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode(tt.data)
			if !errors.Is(err, tt.want) || got != nil {
				t.Fatalf("Decode(%x) = %#v, %v; want an error wrapping %q", tt.data, got, err, tt.want)
			}
			if errors.Is(err, ErrCorrupt) != tt.corrupt {
				t.Errorf("Decode(%x): error %q: wraps %q = %v, want %v", tt.data, err, ErrCorrupt, !tt.corrupt, tt.corrupt)
			}
		})
	}
}

// TestOldEntriesApplyAsBefore: the golden logs written without envelopes,
// as servers wrote them before checksums, replay to the same state and
// snapshot bytes as the same logs in envelopes.
func TestOldEntriesApplyAsBefore(t *testing.T) {
	log := goldenLogV4()
	old := make([]entry, len(log))
	for i, e := range log {
		c, err := Decode(e.data)
		if err != nil {
			t.Fatalf("entry %d: %v", i+1, err)
		}
		old[i] = entry{term: e.term, data: encodePlain(c)}
		if bytes.Equal(old[i].data, e.data) {
			t.Fatalf("entry %d is the same in both forms", i+1)
		}
	}
	mNew, mOld := replay(t, log), replay(t, old)
	if got, want := persist(t, mOld), persist(t, mNew); !bytes.Equal(got, want) {
		t.Errorf("snapshot after the old log differs:\n got %x\nwant %x", got, want)
	}
	assertView(t, viewOf(mOld), viewOf(mNew))
}
