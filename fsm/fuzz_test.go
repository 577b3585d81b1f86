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
// errors; whatever it accepts re-encodes to bytes that decode to the same
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
	f.Add([]byte{7, 1})
	f.Add(rawBatch(Encode(Revoke{Key: "a"}), []byte{0x90, 1}))
	f.Add(rawBatch(Encode(Revoke{Key: "a"}), Encode(Batch{})))

	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Decode(data)
		if err != nil {
			if c != nil {
				t.Fatalf("Decode returned %#v with error %v", c, err)
			}
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownType) && !errors.Is(err, ErrUnknownVersion) {
				t.Fatalf("Decode error %q wraps none of the documented errors", err)
			}
			return
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

func hasIgnored(c Command) bool {
	switch c := c.(type) {
	case Ignored:
		return true
	case Batch:
		for _, sub := range c.Commands {
			if _, ok := sub.(Ignored); ok {
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
	if b, err := os.ReadFile(goldenPath("snapshot-v1.golden")); err == nil {
		f.Add(b)
	}
	golden := persist(f, replay(f, goldenLog()))
	f.Add(golden)
	f.Add(golden[:len(golden)/2])
	f.Add(persist(f, New()))
	f.Add(rawSnapshot(2, &Lease{Key: "b", Token: 1}, &Lease{Key: "a", Token: 2}))
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
	st, index, term, err := readSnapshot(bytes.NewReader(data))

	m := New()
	m.Apply(logEntry(1, 1, acquire("keep", "w")))
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
	if !reflect.DeepEqual(st2, st) || index2 != index || term2 != term {
		t.Fatalf("re-encoded snapshot decodes to a different state")
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
