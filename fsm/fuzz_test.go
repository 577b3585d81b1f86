package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"reflect"
	"testing"
)

// FuzzDecode: Decode never panics; it fails only with its documented
// errors; Verify accepts whatever Decode accepts; whatever it accepts re-encodes to bytes that decode to the same
// command, and a Machine applies it without panicking.
//
//	go test ./fsm -run XXX -fuzz FuzzDecode -fuzztime 30s
func FuzzDecode(f *testing.F) {
	for _, c := range goldenCommandsV1 {
		f.Add(Encode(c.cmd))
	}
	for _, c := range roundTripCommands {
		if b := Encode(c.cmd); len(b) < 4096 {
			f.Add(b)
		}
	}
	f.Add([]byte{})
	f.Add([]byte{byte(TypeAcquire)})
	f.Add([]byte{0x90, 1, 0xde, 0xad})
	f.Add([]byte{byte(unusedType), 1})
	f.Add([]byte{byte(TypeGroupPut), 1})
	f.Add([]byte{byte(TypeKeyControl), 1, 1, 'k', 2, 0})           // bool byte 2
	f.Add([]byte{byte(TypeWorkerDrain), 1, 1, 'w', 0xff})          // bool byte 0xff
	f.Add([]byte{byte(TypeGroupKeys), 1, 1, 'g', 0x7f, 1, 'a', 0}) // list longer than the data
	f.Add([]byte{byte(TypeAssign), 1, 1, 'g', 2, 1, 'a', 1, 'w'})  // map longer than the data
	f.Add(rawBatch(encodePlain(Revoke{Key: "a"}), []byte{0x90, 1}))
	f.Add(rawBatch(encodePlain(Revoke{Key: "a"}), encodePlain(Batch{})))
	f.Add(rawBy("a", encodePlain(By{Accessor: "b", Cmd: Revoke{Key: "k"}})))
	f.Add(rawBy("a", encodePlain(Batch{})))
	f.Add(rawBatch(encodePlain(By{Accessor: "a", Cmd: Revoke{Key: "k"}}), encodePlain(acquire("k", "h"))))

	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Decode(data)
		if err != nil {
			if c != nil {
				t.Fatalf("Decode returned %#v with error %v", c, err)
			}
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownType) && !errors.Is(err, ErrUnknownVersion) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Decode error %q wraps none of the documented errors", err)
			}
			return
		}

		if err := Verify(data); err != nil {
			t.Fatalf("Decode accepts %x but Verify says %v", data, err)
		}
		// Every decodable entry can be applied.
		newNode(t).applyRaw(data)

		if hasIgnored(c) {
			return // Ignored stands for bytes this build cannot write.
		}
		b := Encode(c)
		again, err := Decode(b)
		if err != nil {
			t.Fatalf("Decode(Encode(%#v)): %v", c, err)
		}
		if !reflect.DeepEqual(again, c) {
			t.Fatalf("Decode(Encode(c)) = %#v\nwant %#v", again, c)
		}
		if b2 := Encode(again); !bytes.Equal(b2, b) {
			t.Fatalf("encoding is not stable: %x then %x", b, b2)
		}
	})
}

// canonicalState returns st with its empty lists and maps set to nil, so
// that states decoded from different format versions compare equal.
func canonicalState(st state) state {
	if len(st.leases) == 0 {
		st.leases = nil
	}
	if len(st.groups) == 0 {
		st.groups = nil
	}
	if len(st.controls) == 0 {
		st.controls = nil
	}
	if len(st.drained) == 0 {
		st.drained = nil
	}
	return st
}

func hasIgnored(c Command) bool {
	switch c := c.(type) {
	case Ignored:
		return true
	case By:
		return hasIgnored(c.Cmd)
	case Batch:
		for _, sub := range c.Commands {
			if hasIgnored(sub) {
				return true
			}
		}
	}
	return false
}

// FuzzRestore: readSnapshot never panics and fails only with ErrBadSnapshot;
// a failed Restore leaves the state alone; a snapshot it accepts
// re-encodes to a snapshot that decodes to the same state. Each input is
// also tried with its checksum made valid, so that the fuzzer reaches the
// body's checks.
//
//	go test ./fsm -run XXX -fuzz FuzzRestore -fuzztime 30s
func FuzzRestore(f *testing.F) {
	for _, g := range goldenSnapshots {
		if b, err := os.ReadFile(goldenPath(g.file)); err == nil {
			f.Add(b)
		}
	}
	golden := persist(f, replay(f, goldenLogV2()))
	f.Add(golden)
	f.Add(golden[:len(golden)/2])
	f.Add(golden[:len(golden)-6])
	f.Add(persist(f, New()))
	f.Add(persist(f, replay(f, randomPlacementLog(3, 200))))
	f.Add(rawSnapshot(2, &Lease{Key: "b", Token: 1}, &Lease{Key: "a", Token: 2}))
	grp := func(name string) *Group {
		return &Group{Name: name, Keys: []string{"k"}, Assignment: map[string]string{"k": "w"}}
	}
	f.Add(rawSnapshotV2(rawPlacement{groups: []*Group{grp("b"), grp("a")}}))
	f.Add(rawSnapshotV2(rawPlacement{index: 4, groups: []*Group{grp("a")},
		controls: []rawControl{{"k", KeyControl{Disabled: true, Prohibited: []string{"w"}}}}, drained: []string{"w"}}))
	f.Add([]byte("TNRS"))
	f.Add([]byte{})

	f.Fuzz(func(t *testing.T, data []byte) {
		checkSnapshot(t, data)
		if len(data) >= headerLen+4 {
			fixed := bytes.Clone(data)
			binary.BigEndian.PutUint32(fixed[len(fixed)-4:], crc32.Checksum(fixed[:len(fixed)-4], castagnoli))
			checkSnapshot(t, fixed)
		}
	})
}

func checkSnapshot(t *testing.T, data []byte) {
	t.Helper()
	st, index, term, err := readSnapshot(bytes.NewReader(data), 0)

	m := New()
	m.Apply(logEntry(1, 1, acquire("keep", "w")))
	m.Apply(logEntry(2, 1, GroupPut{Name: "keep", Keys: []string{"keep"}}))
	m.Apply(logEntry(3, 1, SetKeyControl{Key: "keep", Control: KeyControl{Prohibited: []string{"x"}}}))
	before := viewOf(m)
	restoreErr := m.Restore(io.NopCloser(bytes.NewReader(data)))

	if err != nil {
		if !errors.Is(err, ErrBadSnapshot) {
			t.Fatalf("readSnapshot error %q does not wrap ErrBadSnapshot", err)
		}
		if restoreErr == nil {
			t.Fatal("Restore accepted what readSnapshot refused")
		}
		assertView(t, viewOf(m), before)
		return
	}

	b := encodeSnapshot(st, index, term)
	st2, index2, term2, err := decodeSnapshot(b)
	if err != nil {
		t.Fatalf("re-encoded snapshot does not decode: %v", err)
	}
	// A version 1 snapshot re-encodes as the current version; its empty
	// placement state may decode to empty values instead of nil ones.
	if !reflect.DeepEqual(canonicalState(st2), canonicalState(st)) || index2 != index || term2 != term {
		t.Fatalf("re-encoded snapshot decodes to a different state:\n%s\nwant\n%s",
			formatSnapshot(decodedSnapshot{st2, index2, term2}), formatSnapshot(decodedSnapshot{st, index, term}))
	}
	if b2 := encodeSnapshot(st2, index2, term2); !bytes.Equal(b2, b) {
		t.Fatalf("snapshot encoding is not stable: %x then %x", b, b2)
	}
	if restoreErr != nil {
		if st.lastToken >= 1 {
			t.Fatalf("Restore of a valid snapshot with token counter %d: %v", st.lastToken, restoreErr)
		}
		return // the snapshot's counter is below the machine's 1
	}
	if got := m.snapshotBytes(); !bytes.Equal(got, b) {
		t.Fatalf("restored machine's snapshot differs from the re-encoded one")
	}
	// The restored machine keeps working.
	r := m.Apply(logEntry(index+1, term, acquire("fuzz/new-key", "w"))).(Result)
	if r.Code == Granted && st.lastToken < ^uint64(0) && r.Lease.Token != st.lastToken+1 {
		t.Fatalf("acquire after Restore got token %d, want %d", r.Lease.Token, st.lastToken+1)
	}
}
