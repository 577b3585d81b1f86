package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/hashicorp/raft"
)

// A log entry is written in a checksummed envelope:
//
//	type (1 byte) | envelopeFlag|version (1 byte) | payload | CRC-32C (4 bytes, big endian)
//
// The CRC covers every byte before it. Entries written before the envelope
// existed are `type | 1 | payload` and carry no checksum; they stay
// readable. The flag sits in the version byte because the old format
// requires that byte to be exactly 1: an envelope whose version byte is
// damaged either keeps the flag (and fails its checksum) or loses it, and
// then reads as an old entry of a known type that is either of an unknown
// version or, when it becomes 1, four bytes too long (the old decoder
// rejects trailing bytes). No single damaged byte turns an envelope into an
// entry that decodes. The commands inside a Batch or a By are written
// without an envelope: the outer entry's checksum covers them.
// docs/adr/0001-command-encoding.md has the whole argument.
const (
	envelopeFlag byte = 0x80
	crcLen       int  = 4
)

// ErrCorrupt is wrapped by Decode and Verify for an entry whose bytes are
// damaged: a checksum that does not match, an envelope too short for one,
// or an entry without an envelope (written before checksums) that does not
// decode, since every build that wrote those could read them all. Its
// remedy is a copy of the log that is not damaged, never an upgrade.
var ErrCorrupt = errors.New("corrupt log entry")

// EntryError is the error of ApplyLog: the entry at Index could not be
// applied, and nothing of it was.
type EntryError struct {
	Index uint64
	Err   error
}

func (e *EntryError) Error() string {
	return fmt.Sprintf("cannot apply entry at index %d: %v", e.Index, e.Err)
}

func (e *EntryError) Unwrap() error { return e.Err }

// Encode returns the wire form of c in its checksummed envelope: its type
// byte, the payload version with envelopeFlag, the payload, then the
// CRC-32C of everything before it.
func Encode(c Command) []byte {
	b := encodePlain(c)
	b[1] |= envelopeFlag
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// encodePlain is the form without an envelope: type, version, payload.
// Commands inside a Batch or a By are written so; whole entries were
// before checksums.
func encodePlain(c Command) []byte {
	e := &encoder{buf: make([]byte, 0, 64)}
	e.byte(byte(c.Type()))
	e.byte(payloadVersion(c))
	c.encode(e)
	return e.buf
}

// Decode parses what Encode wrote, and the entries without an envelope
// that earlier builds wrote. It never panics; every failure wraps
// ErrCorrupt (damaged bytes), or ErrUnknownType, ErrUnknownVersion or
// ErrMalformed (an intact entry this build cannot read: written by a
// newer build, or a bug).
func Decode(b []byte) (Command, error) {
	if len(b) < 2 || b[1]&envelopeFlag == 0 {
		c, err := decode(b, true, true)
		if err != nil {
			// No build wrote an entry without an envelope that it could
			// not read back: one that does not decode is damaged.
			return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return c, nil
	}
	if err := checkEnvelope(b); err != nil {
		return nil, err
	}
	t, version := Type(b[0]), b[1]&^envelopeFlag
	if !known(t) && t&IgnorableFlag != 0 {
		return Ignored{T: t}, nil
	}
	if !versionKnown(t, version) {
		return nil, fmt.Errorf("%w: type %d version %d", ErrUnknownVersion, t, version)
	}
	plain := make([]byte, len(b)-crcLen)
	copy(plain, b)
	plain[1] = version
	return decode(plain, true, true)
}

// checkEnvelope verifies the length and the checksum of an entry whose
// version byte carries envelopeFlag.
func checkEnvelope(b []byte) error {
	if len(b) < 2+crcLen {
		return fmt.Errorf("%w: %d bytes, an entry with a checksum has at least %d", ErrCorrupt, len(b), 2+crcLen)
	}
	body, sum := b[:len(b)-crcLen], binary.BigEndian.Uint32(b[len(b)-crcLen:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return fmt.Errorf("%w: checksum %08x, the entry says %08x", ErrCorrupt, got, sum)
	}
	return nil
}

// Verify reports whether data is an intact log entry: for an entry in an
// envelope it checks the checksum only (an intact entry of a newer build
// passes), for an older entry without one it decodes it. Its errors wrap
// ErrCorrupt. It is cheaper than Decode: servers run it over their whole
// log at start.
func Verify(data []byte) error {
	if len(data) >= 2 && data[1]&envelopeFlag != 0 {
		return checkEnvelope(data)
	}
	_, err := Decode(data)
	return err
}

// ApplyLog applies one committed log entry as Apply does, but returns an
// *EntryError instead of panicking when the entry cannot be decoded; the
// state is then unchanged. Servers use it to stop cleanly, naming the
// entry, rather than crash.
func (m *Machine) ApplyLog(l *raft.Log) (interface{}, error) {
	cmd, err := Decode(l.Data)
	if err != nil {
		return nil, &EntryError{Index: l.Index, Err: err}
	}
	return m.applyCommand(l, cmd), nil
}
