package fsm

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// roundTripCommands has every command type, with the corners of its fields.
var roundTripCommands = []struct {
	name string
	cmd  Command
}{
	{"acquire", acquire("scene-01", "tracker-0-4242-1a2b3c4d")},
	{"acquire with metadata", Acquire{Key: "partitions/17", Holder: "w", TTL: 1500 * time.Millisecond,
		Metadata: map[string]string{"zone": "eu-1", "version": "1.4.2", "": "empty key", "note": "ünïcødé ✓"}, Time: wall}},
	{"acquire with zero values", Acquire{}},
	{"acquire with extreme numbers", Acquire{Key: "k", Holder: "h", TTL: math.MaxInt64, Time: math.MinInt64}},
	{"acquire with a negative ttl", Acquire{Key: "k", Holder: "h", TTL: -time.Second, Time: -1}},
	{"acquire with a long holder", Acquire{Key: strings.Repeat("k", MaxKeyLen), Holder: strings.Repeat("h", 4096), TTL: ttl}},
	{"release", Release{Key: "scene-01", Holder: "tracker-0", Token: 17}},
	{"release with the largest token", Release{Key: "k", Holder: "h", Token: math.MaxUint64}},
	{"release with zero values", Release{}},
	{"expire", Expire{Key: "elections/scheduler", Token: 300, Term: 7}},
	{"expire with the largest token and term", Expire{Key: "k", Token: math.MaxUint64, Term: math.MaxUint64}},
	{"revoke", Revoke{Key: "scene-01"}},
	{"revoke of the empty key", Revoke{}},
	{"leader established", LeaderEstablished{Term: 12}},
	{"leader established in term 0", LeaderEstablished{}},
	{"handover", Handover{Term: 7, Leases: []HandedLease{{Key: "a", Token: 3, ModifyIndex: 5, Left: 2 * time.Second}, {Key: "b", Token: math.MaxUint64, ModifyIndex: 1}}}},
	{"handover of no lease", Handover{Term: 7, Leases: []HandedLease{}}},
	{"empty batch", Batch{Commands: []Command{}}},
	{"batch of every type", Batch{Commands: []Command{
		Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: map[string]string{"zone": "a"}, Time: wall},
		Release{Key: "a", Holder: "w1", Token: 1},
		Expire{Key: "b", Token: 2, Term: 3},
		Revoke{Key: "c"},
		LeaderEstablished{Term: 4},
		acquire("a", "w2"),
	}}},
	{"group put", GroupPut{Name: "partitions", Keys: []string{"partitions/0", "partitions/1"}, MaxPerWorker: 3}},
	{"group put as written, unsorted and with duplicates", GroupPut{Name: "g", Keys: []string{"b", "a", "b", ""}}},
	{"group put with extreme bounds", GroupPut{Name: "g", Keys: []string{"k"}, MaxPerWorker: math.MinInt}},
	{"group put with the largest bound", GroupPut{Name: "g", MaxPerWorker: math.MaxInt}},
	{"group put with zero values", GroupPut{}},
	{"group delete", GroupDelete{Name: "partitions"}},
	{"group delete with zero values", GroupDelete{}},
	{"group keys", GroupKeys{Name: "partitions", Add: []string{"partitions/2", "partitions/3"}, Remove: []string{"partitions/0"}}},
	{"group keys that only add", GroupKeys{Name: "g", Add: []string{"a"}}},
	{"group keys that only remove", GroupKeys{Name: "g", Remove: []string{"a", "ünïcødé ✓"}}},
	{"group keys with zero values", GroupKeys{}},
	{"group set keys", GroupSetKeys{Name: "sessions", Keys: []string{"sessions/b", "sessions/a"}}},
	{"group set keys to none", GroupSetKeys{Name: "sessions"}},
	{"key control disabled", SetKeyControl{Key: "scene-01", Control: KeyControl{Disabled: true}}},
	{"key control with prohibited holders", SetKeyControl{Key: "scene-01", Control: KeyControl{Prohibited: []string{"w-b", "w-a"}}}},
	{"key control disabled with prohibited holders", SetKeyControl{Key: "k", Control: KeyControl{Disabled: true, Prohibited: []string{strings.Repeat("h", 4096)}}}},
	{"key control cleared", SetKeyControl{Key: "scene-01"}},
	{"worker drain", WorkerDrain{Worker: "w-a", Draining: true}},
	{"worker undrain", WorkerDrain{Worker: "w-a"}},
	{"worker drain with zero values", WorkerDrain{}},
	{"assign", Assign{Group: "partitions", Assignment: map[string]string{"partitions/0": "w-a", "partitions/1": "w-b"}}},
	{"group max", GroupMax{Name: "partitions", MaxPerWorker: 12}},
	{"assign with empty keys and workers", Assign{Group: "g", Assignment: map[string]string{"": "w", "k": ""}}},
	{"assign with zero values", Assign{}},
	{"batch of every placement type", Batch{Commands: []Command{
		GroupPut{Name: "g", Keys: []string{"a", "b"}, MaxPerWorker: 1},
		Assign{Group: "g", Assignment: map[string]string{"a": "w1"}},
		GroupKeys{Name: "g", Add: []string{"c"}, Remove: []string{"a"}},
		SetKeyControl{Key: "b", Control: KeyControl{Disabled: true, Prohibited: []string{"w2"}}},
		WorkerDrain{Worker: "w1", Draining: true},
		GroupDelete{Name: "g"},
	}}},
	{"group put cas", GroupPutCAS{Define: GroupDefine{Name: "g", Keys: []string{"a", "b"}, MaxPerWorker: 2}, Index: 17}},
	{"group put cas that only creates", GroupPutCAS{Define: GroupDefine{Name: "g"}}},
	{"group put cas with the largest index", GroupPutCAS{Define: GroupDefine{Name: "g", MaxPerWorker: math.MaxInt}, Index: math.MaxUint64}},
	{"edit key control", EditKeyControl{Key: "k", SetDisabled: true, Disabled: true, Prohibit: []string{"w2", "w1"}, Allow: []string{"w3"}}},
	{"edit key control with zero values", EditKeyControl{}},
	{"forget", Forget{Key: "lock/once", Token: 42}},
	{"forget with the largest token", Forget{Key: "k", Token: math.MaxUint64}},
	{"forget with zero values", Forget{}},
	{"batch of every edit type", Batch{Commands: []Command{
		GroupPutCAS{Define: GroupDefine{Name: "g", Keys: []string{"a"}}},
		EditKeyControl{Key: "a", Prohibit: []string{"w"}},
		Forget{Key: "b", Token: 1},
	}}},
	{"by", By{Accessor: "0b1f7a52-3f0c-4d1e-9a55-8d0b6a1c2e3f", Cmd: Revoke{Key: "scene-01"}}},
	{"by with zero values", By{Cmd: Revoke{}}},
	{"by of every operator type", Batch{Commands: []Command{
		By{Accessor: "anonymous", Cmd: GroupPut{Name: "g", Keys: []string{"a"}}},
		By{Accessor: "a", Cmd: GroupKeys{Name: "g", Add: []string{"b"}}},
		By{Accessor: "a", Cmd: GroupMax{Name: "g", MaxPerWorker: 2}},
		By{Accessor: "a", Cmd: SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}}},
		By{Accessor: "a", Cmd: WorkerDrain{Worker: "w", Draining: true}},
		By{Accessor: "a", Cmd: GroupDelete{Name: "g"}},
		By{Accessor: "a", Cmd: Revoke{Key: "a"}},
	}}},
	{"batch of 1000", func() Command {
		cmds := make([]Command, 1000)
		for i := range cmds {
			cmds[i] = Release{Key: fmt.Sprintf("k%d", i), Holder: "h", Token: uint64(i)}
		}
		return Batch{Commands: cmds}
	}()},
}

func TestEncodeDecodeRoundTrip(t *testing.T) {
	for _, tt := range roundTripCommands {
		t.Run(tt.name, func(t *testing.T) {
			b := Encode(tt.cmd)

			if Type(b[0]) != tt.cmd.Type() || b[1] != envelopeFlag|version1 {
				t.Errorf("header = %#x %#x, want type %#x version %#x", b[0], b[1], tt.cmd.Type(), envelopeFlag|version1)
			}
			got, err := Decode(b)
			if err != nil {
				t.Fatalf("Decode(Encode(%T)): %v", tt.cmd, err)
			}
			if !reflect.DeepEqual(got, tt.cmd) {
				t.Errorf("Decode(Encode(c)) =\n  %#v\nwant\n  %#v", got, tt.cmd)
			}
			if again := Encode(got); !bytes.Equal(again, b) {
				t.Errorf("Encode(Decode(b)) = %x\nwant            %x", again, b)
			}
		})
	}
}

// TestDecodeEmptyMetadata: an empty metadata map and no map encode the
// same way, so both decode to no map. A re-acquire with either keeps the
// lease's metadata.
func TestDecodeEmptyMetadata(t *testing.T) {
	for _, md := range []map[string]string{nil, {}} {
		got, err := Decode(Encode(Acquire{Key: "k", Holder: "h", Metadata: md}))
		if err != nil {
			t.Fatalf("Decode: %v", err)
		}
		if m := got.(Acquire).Metadata; m != nil {
			t.Errorf("metadata %#v decoded to %#v, want nil", md, m)
		}
	}
}

// TestEncodeIsCanonical: equal commands encode to equal bytes whatever the
// order their metadata maps were filled in, so that every replica writes
// the same snapshot bytes.
func TestEncodeIsCanonical(t *testing.T) {
	const n = 64
	forward := make(map[string]string, n)
	backward := make(map[string]string)
	for i := 0; i < n; i++ {
		forward[fmt.Sprintf("k%02d", i)] = fmt.Sprint(i)
		backward[fmt.Sprintf("k%02d", n-1-i)] = fmt.Sprint(n - 1 - i)
	}
	want := Encode(Acquire{Key: "k", Holder: "h", Metadata: forward})
	for i := 0; i < 20; i++ {
		for name, md := range map[string]map[string]string{"forward": forward, "backward": backward} {
			if got := Encode(Acquire{Key: "k", Holder: "h", Metadata: md}); !bytes.Equal(got, want) {
				t.Fatalf("run %d, %s map: encoding differs:\n got %x\nwant %x", i, name, got, want)
			}
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	acq := encodePlain(Acquire{Key: "a", Holder: "w", TTL: ttl, Metadata: map[string]string{"z": "1"}, Time: wall})
	withVersion := func(b []byte, v byte) []byte {
		c := bytes.Clone(b)
		c[1] = v
		return c
	}
	bigLen := &encoder{}
	bigLen.byte(byte(TypeRevoke))
	bigLen.byte(version1)
	bigLen.uvarint(maxStringLen + 1)
	bigLen.buf = append(bigLen.buf, make([]byte, 16)...)

	// patch returns b with the byte at off (from the end when negative)
	// set to v.
	patch := func(b []byte, off int, v byte) []byte {
		c := bytes.Clone(b)
		if off < 0 {
			off += len(c)
		}
		c[off] = v
		return c
	}
	ctl := encodePlain(SetKeyControl{Key: "k", Control: KeyControl{Disabled: true, Prohibited: []string{"w"}}})
	drain := encodePlain(WorkerDrain{Worker: "w", Draining: true})
	put := encodePlain(GroupPut{Name: "g", Keys: []string{"a", "b"}, MaxPerWorker: 2})
	assign := encodePlain(Assign{Group: "g", Assignment: map[string]string{"a": "w"}})
	gkeys := encodePlain(GroupKeys{Name: "g", Add: []string{"a"}, Remove: []string{"b"}})
	if known(unusedType) {
		t.Fatalf("type %#x is known: pick another unusedType", unusedType)
	}

	tests := []struct {
		name string
		data []byte
		want error
	}{
		{name: "empty", data: nil, want: ErrMalformed},
		{name: "type only", data: []byte{byte(TypeRevoke)}, want: ErrMalformed},
		{name: "unknown type", data: []byte{byte(unusedType), version1}, want: ErrUnknownType},
		{name: "type zero", data: []byte{0, version1}, want: ErrUnknownType},
		{name: "unknown type of an unknown version", data: []byte{0x33, 2, 1, 2}, want: ErrUnknownType},
		{name: "version 3", data: withVersion(acq, 3), want: ErrUnknownVersion},
		{name: "version 2 without its secret hash", data: withVersion(acq, 2), want: ErrMalformed},
		{name: "version 2 of a revoke", data: withVersion(encodePlain(Revoke{Key: "a"}), 2), want: ErrUnknownVersion},
		{name: "version 0", data: withVersion(acq, 0), want: ErrUnknownVersion},
		{name: "version 127 of a batch", data: withVersion(encodePlain(Batch{}), 127), want: ErrUnknownVersion},
		{name: "truncated acquire", data: acq[:len(acq)-1], want: ErrMalformed},
		{name: "acquire without payload", data: acq[:2], want: ErrMalformed},
		{name: "trailing byte", data: append(bytes.Clone(acq), 0), want: ErrMalformed},
		{name: "string longer than the limit", data: bigLen.buf, want: ErrMalformed},
		{name: "string longer than the data", data: []byte{byte(TypeRevoke), version1, 10, 'a'}, want: ErrMalformed},
		{name: "varint overflow", data: []byte{byte(TypeLeaderEstablished), version1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, want: ErrMalformed},
		{name: "map of more entries than bytes", data: []byte{byte(TypeAcquire), version1, 0, 0, 0, 0x7f, 0}, want: ErrMalformed},
		{name: "batch of more entries than bytes", data: []byte{byte(TypeBatch), version1, 50, 0}, want: ErrMalformed},
		{name: "batch entry too short", data: rawBatch([]byte{byte(TypeRevoke)}), want: ErrMalformed},
		{name: "nested batch", data: rawBatch(encodePlain(Revoke{Key: "a"}), encodePlain(Batch{})), want: ErrMalformed},
		{name: "batch with an unknown type", data: rawBatch(encodePlain(Revoke{Key: "a"}), []byte{byte(unusedType), version1}), want: ErrUnknownType},
		{name: "batch with an unknown version", data: rawBatch(withVersion(acq, 3)), want: ErrUnknownVersion},
		{name: "batch with trailing bytes", data: append(rawBatch(encodePlain(Revoke{Key: "a"})), 1), want: ErrMalformed},

		// By wraps one command, never a batch or another By.
		{name: "by of a by", data: rawBy("a", encodePlain(By{Accessor: "b", Cmd: Revoke{Key: "k"}})), want: ErrMalformed},
		{name: "by of a batch", data: rawBy("a", encodePlain(Batch{})), want: ErrMalformed},
		{name: "by of nothing", data: rawBy("a", nil), want: ErrMalformed},
		{name: "by of a truncated command", data: rawBy("a", acq[:len(acq)-1]), want: ErrMalformed},
		{name: "by of an unknown type", data: rawBy("a", []byte{byte(unusedType), version1}), want: ErrUnknownType},
		{name: "by with an accessor over the limit", data: rawBy(strings.Repeat("a", MaxAccessorLen+1), encodePlain(Revoke{Key: "k"})), want: ErrMalformed},
		{name: "by with trailing bytes", data: append(rawBy("a", encodePlain(Revoke{Key: "k"})), 0), want: ErrMalformed},
		{name: "batch of a by of a by", data: rawBatch(rawBy("a", rawBy("b", encodePlain(Revoke{Key: "k"})))), want: ErrMalformed},

		// Placement commands. ctl is 0a 01 | 01 'k' | disabled | 01 01 'w'.
		{name: "key control with bool byte 2", data: patch(ctl, 4, 2), want: ErrMalformed},
		{name: "key control with bool byte 0xff", data: patch(ctl, 4, 0xff), want: ErrMalformed},
		{name: "key control with more prohibited holders than bytes", data: patch(ctl, 5, 0x7f), want: ErrMalformed},
		{name: "key control with a holder longer than the data", data: patch(ctl, 6, 9), want: ErrMalformed},
		{name: "key control without its bool", data: ctl[:4], want: ErrMalformed},
		{name: "key control without its holders", data: ctl[:5], want: ErrMalformed},
		{name: "worker drain with bool byte 2", data: patch(drain, -1, 2), want: ErrMalformed},
		{name: "worker drain with bool byte 0x80", data: patch(drain, -1, 0x80), want: ErrMalformed},
		{name: "worker drain without its bool", data: drain[:len(drain)-1], want: ErrMalformed},
		{name: "worker drain with trailing byte", data: append(bytes.Clone(drain), 0), want: ErrMalformed},
		// put is 07 01 | 01 'g' | 02 01 'a' 01 'b' | 04.
		{name: "group put with more keys than bytes", data: patch(put, 4, 0x40), want: ErrMalformed},
		{name: "group put with a list length that overflows", data: append([]byte{byte(TypeGroupPut), version1, 1, 'g'}, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0), want: ErrMalformed},
		{name: "group put with three keys in the bytes of two", data: patch(put, 4, 3), want: ErrMalformed},
		{name: "group put without its bound", data: put[:len(put)-1], want: ErrMalformed},
		{name: "group put with trailing byte", data: append(bytes.Clone(put), 0), want: ErrMalformed},
		{name: "group delete without its name", data: []byte{byte(TypeGroupDelete), version1}, want: ErrMalformed},
		{name: "group delete with a name longer than the data", data: []byte{byte(TypeGroupDelete), version1, 5, 'g'}, want: ErrMalformed},
		// gkeys is 09 01 | 01 'g' | 01 01 'a' | 01 01 'b'.
		{name: "group keys with more removals than bytes", data: patch(gkeys, 7, 9), want: ErrMalformed},
		{name: "group keys without its removals", data: gkeys[:7], want: ErrMalformed},
		{name: "group keys with trailing byte", data: append(bytes.Clone(gkeys), 1), want: ErrMalformed},
		// assign is 0c 01 | 01 'g' | 01 01 'a' 01 'w'.
		{name: "assign with more entries than bytes", data: patch(assign, 4, 0x7f), want: ErrMalformed},
		{name: "assign without the worker of its last entry", data: assign[:len(assign)-2], want: ErrMalformed},
		{name: "assign with trailing byte", data: append(bytes.Clone(assign), 0), want: ErrMalformed},
		{name: "version 2 of a key control", data: withVersion(ctl, 2), want: ErrUnknownVersion},
		{name: "version 0 of an assign", data: withVersion(assign, 0), want: ErrUnknownVersion},
		{name: "batch with a malformed worker drain", data: rawBatch(encodePlain(Revoke{Key: "a"}), patch(drain, -1, 2)), want: ErrMalformed},
	}
	sentinels := []error{ErrMalformed, ErrUnknownType, ErrUnknownVersion}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode(tt.data)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Decode(%x) = %#v, %v; want an error wrapping %q", tt.data, got, err, tt.want)
			}
			if got != nil {
				t.Errorf("Decode returned %#v with its error, want nil", got)
			}
			for _, s := range sentinels {
				if s != tt.want && errors.Is(err, s) {
					t.Errorf("error %q also wraps %q", err, s)
				}
			}
		})
	}
}

// TestDecodeIgnorable: a command type that a newer build writes with
// IgnorableFlag decodes, on this build, to Ignored, whatever its version
// and payload.
func TestDecodeIgnorable(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want Command
	}{
		{name: "no payload", data: []byte{0x80, 1}, want: Ignored{T: 0x80}},
		{name: "payload", data: []byte{0x91, 1, 0xde, 0xad, 0xbe, 0xef}, want: Ignored{T: 0x91}},
		{name: "unknown version", data: []byte{0xff, 0x7f, 1}, want: Ignored{T: 0xff}},
		{name: "in an envelope", data: sealed([]byte{0x91, envelopeFlag | 1, 0xde, 0xad}), want: Ignored{T: 0x91}},
		{name: "in an envelope of an unknown version", data: sealed([]byte{0xff, envelopeFlag | 9}), want: Ignored{T: 0xff}},
		{name: "in a batch", data: rawBatch(encodePlain(Revoke{Key: "a"}), []byte{0x90, 1, 2}),
			want: Batch{Commands: []Command{Revoke{Key: "a"}, Ignored{T: 0x90}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode(tt.data)
			if err != nil {
				t.Fatalf("Decode(%x): %v", tt.data, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Decode(%x) = %#v, want %#v", tt.data, got, tt.want)
			}
		})
	}
}

// TestTypeValuesAreFixed pins the type bytes: they are in every log and
// snapshot already written and must never change.
func TestTypeValuesAreFixed(t *testing.T) {
	tests := []struct {
		cmd  Command
		want Type
	}{
		{Acquire{}, 1},
		{Release{}, 2},
		{Expire{}, 3},
		{Revoke{}, 4},
		{LeaderEstablished{}, 5},
		{Batch{}, 6},
		{GroupPut{}, 7},
		{GroupDelete{}, 8},
		{GroupKeys{}, 9},
		{SetKeyControl{KeepsHolder: true}, 10},
		{WorkerDrain{}, 11},
		{Assign{}, 12},
		{GroupMax{}, 13},
		{End{}, 20},
		{SetKeyControl{Force: true}, 21},
		{By{Cmd: Revoke{}}, 22},
		{GroupDefine{}, 23},
		{MarkStuck{}, 24},
		{GroupPutCAS{}, 25},
		{EditKeyControl{}, 26},
		{Forget{}, 27},
		{SetKeyControl{}, 28},
		{ClusterID{}, 29},
		{BackupKey{}, 31},
		{GroupSetKeys{}, 32},
	}
	for _, tt := range tests {
		if got := tt.cmd.Type(); got != tt.want {
			t.Errorf("%T.Type() = %d, want %d", tt.cmd, got, tt.want)
		}
		if got := Encode(tt.cmd)[0]; Type(got) != tt.want {
			t.Errorf("Encode(%T)[0] = %d, want %d", tt.cmd, got, tt.want)
		}
	}
}

func TestValidateKey(t *testing.T) {
	tests := []struct {
		name string
		key  string
		ok   bool
	}{
		{name: "one byte", key: "a", ok: true},
		{name: "scene", key: "scene-01", ok: true},
		{name: "slashes group", key: "partitions/17", ok: true},
		{name: "every allowed class", key: "AZaz09._:/-", ok: true},
		{name: "256 bytes", key: strings.Repeat("x", 256), ok: true},
		{name: "empty", key: ""},
		{name: "257 bytes", key: strings.Repeat("x", 257)},
		{name: "space", key: "scene 01"},
		{name: "star", key: "a*"},
		{name: "non-ASCII", key: "szene-ö"},
		{name: "NUL", key: "a\x00b"},
		{name: "newline", key: "a\n"},
		{name: "query characters", key: "a?b=c"},
		{name: "percent", key: "a%2Fb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateKey(tt.key)
			if tt.ok && err != nil {
				t.Errorf("ValidateKey(%q) = %v, want nil", tt.key, err)
			}
			if !tt.ok && !errors.Is(err, ErrInvalidKey) {
				t.Errorf("ValidateKey(%q) = %v, want an error wrapping %q", tt.key, err, ErrInvalidKey)
			}
		})
	}
}
