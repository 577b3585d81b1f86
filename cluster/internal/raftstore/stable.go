package raftstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"path/filepath"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/tenure-io/tenure/cluster/internal/identity"
)

// Raft keeps its term and its vote in the stable store of raft.db, under
// the keys of sealedKeys. A server that forgets them may vote twice in one
// term, or take a term back, and nothing in Raft notices. tenure writes
// each of these values sealed, in the same key:
//
//	value | CRC-32C of (key name | value) (4 bytes, big endian) | sealMagic (4 bytes)
//
// One key is one bbolt transaction, so a crash leaves a key with its old
// value and checksum or with its new ones, never a mix: a torn write never
// looks like damage. Values written by builds before the seal (no
// trailer) are read as they are and sealed at start (CheckStableStore).
// docs/adr/0028-raft-stable-store-checksum.md has the argument.
var sealedKeys = map[string]bool{"CurrentTerm": true, "LastVoteTerm": true, "LastVoteCand": true}

// sealUint64Keys are the sealed keys that hold an 8-byte number.
var sealUint64Keys = map[string]bool{"CurrentTerm": true, "LastVoteTerm": true}

// sealMagic ends every sealed value. Its first byte is never in a Raft
// address or server id (printable text), so an unsealed vote does not end
// with it.
const sealMagic = "\xfftv1"

// sealLen is what a seal adds to a value.
const sealLen = 4 + len(sealMagic)

// ErrStableCorrupt is wrapped by the errors of a term or vote in raft.db
// that does not match its checksum, or that contradicts the log.
var ErrStableCorrupt = errors.New("term or vote damaged")

var sealTable = crc32.MakeTable(crc32.Castagnoli)

func sealSum(key, value []byte) uint32 {
	return crc32.Update(crc32.Checksum(key, sealTable), sealTable, value)
}

// seal returns value sealed under key.
func seal(key, value []byte) []byte {
	out := make([]byte, 0, len(value)+sealLen)
	out = append(out, value...)
	out = binary.BigEndian.AppendUint32(out, sealSum(key, value))
	return append(out, sealMagic...)
}

// unseal returns the value of a stored one and whether it was sealed: an
// error wrapping ErrStableCorrupt when its checksum does not match, or
// when a number is neither sealed nor 8 bytes.
func unseal(key, stored []byte) (value []byte, sealed bool, err error) {
	number := sealUint64Keys[string(key)]
	sealed = bytes.HasSuffix(stored, []byte(sealMagic)) && len(stored) >= sealLen
	if number && len(stored) != 8+sealLen {
		sealed = false
	}
	if !sealed {
		if number && len(stored) != 8 {
			return nil, false, fmt.Errorf("%w: %s is %d bytes, neither a number (8) nor a sealed one (%d)", ErrStableCorrupt, key, len(stored), 8+sealLen)
		}
		return stored, false, nil
	}
	value = stored[:len(stored)-sealLen]
	want := binary.BigEndian.Uint32(stored[len(value):])
	if got := sealSum(key, value); got != want {
		return nil, true, fmt.Errorf("%w: %s does not match its checksum (%08x, stored %08x)", ErrStableCorrupt, key, got, want)
	}
	return value, true, nil
}

// SealedStable is Raft's stable store with the keys of sealedKeys sealed:
// every Set and SetUint64 of them writes the value with its checksum, in
// one write; every Get and GetUint64 checks it. Other keys pass through.
// Raft calls it from its own goroutines; it keeps no state.
type SealedStable struct{ raft.StableStore }

func (s SealedStable) Set(key, value []byte) error {
	if sealedKeys[string(key)] {
		value = seal(key, value)
	}
	return s.StableStore.Set(key, value)
}

func (s SealedStable) Get(key []byte) ([]byte, error) {
	stored, err := s.StableStore.Get(key)
	if err != nil || !sealedKeys[string(key)] {
		return stored, err
	}
	value, _, err := unseal(key, stored)
	return value, err
}

func (s SealedStable) SetUint64(key []byte, value uint64) error {
	if !sealedKeys[string(key)] {
		return s.StableStore.SetUint64(key, value)
	}
	return s.Set(key, binary.BigEndian.AppendUint64(nil, value))
}

func (s SealedStable) GetUint64(key []byte) (uint64, error) {
	if !sealedKeys[string(key)] {
		return s.StableStore.GetUint64(key)
	}
	value, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(value) != 8 {
		return 0, fmt.Errorf("%w: %s is %d bytes, not a number", ErrStableCorrupt, key, len(value))
	}
	return binary.BigEndian.Uint64(value), nil
}

// CheckStableStore runs before Raft starts. It checks the term and vote of
// raft.db: each matches its checksum; none is missing that Raft writes
// before another that is there (a vote's candidate without its term, log
// entries without a current term); the vote is of a term not after the
// current one; and the current term is not before the term of the last
// log entry or of the newest snapshot, which this server once accepted,
// so it cannot be older than them (this finds a term taken back whole,
// e.g. from an old copy of the file, where checksums still match). Then
// it seals the values written by an older build. A failed check is an
// identity.ErrRefusedStart error naming the file and the remedy.
func CheckStableStore(raw raft.StableStore, logs raft.LogStore, snaps raft.SnapshotStore, dataDir, nodeID string) error {
	path := filepath.Join(dataDir, DBFile)
	refuse := func(err error) error {
		return fmt.Errorf("%w: the term and vote in %s cannot be trusted: %w. A server that forgets its term or vote may vote twice in one term; "+
			"keep it stopped and %s (see \"A damaged Raft log\" in docs/operations.md)", identity.ErrRefusedStart, path, err, ResyncRemedy(nodeID, dataDir))
	}
	values := map[string][]byte{}
	var unsealed [][]byte
	for _, k := range []string{"CurrentTerm", "LastVoteTerm", "LastVoteCand"} {
		stored, err := raw.Get([]byte(k))
		if errors.Is(err, raftboltdb.ErrKeyNotFound) {
			continue
		}
		if err != nil {
			return DamagedStore(path, dataDir, nodeID, err)
		}
		value, sealed, err := unseal([]byte(k), stored)
		if err != nil {
			return refuse(err)
		}
		values[k] = value
		if !sealed {
			unsealed = append(unsealed, []byte(k))
		}
	}
	number := func(k string) (uint64, bool) {
		v, ok := values[k]
		if !ok {
			return 0, false
		}
		return binary.BigEndian.Uint64(v), true
	}
	// Raft writes LastVoteTerm before LastVoteCand, and CurrentTerm
	// before any log entry: a key missing against that order was lost
	// (e.g. a byte of its name edited), not yet to be written.
	_, hasCand := values["LastVoteCand"]
	_, hasVote := values["LastVoteTerm"]
	if hasCand && !hasVote {
		return refuse(fmt.Errorf("%w: LastVoteCand without LastVoteTerm (Raft writes the vote's term first): the term of the last vote is lost", ErrStableCorrupt))
	}
	term, hasTerm := number("CurrentTerm")
	if !hasTerm {
		last, err := logs.LastIndex()
		if err != nil {
			return DamagedStore(path, dataDir, nodeID, err)
		}
		if last > 0 {
			return refuse(fmt.Errorf("%w: no CurrentTerm, but the log has entries up to index %d (Raft writes the term first): the current term is lost", ErrStableCorrupt, last))
		}
	}
	if vote, ok := number("LastVoteTerm"); ok && vote > term {
		return refuse(fmt.Errorf("%w: LastVoteTerm %d is after CurrentTerm %d", ErrStableCorrupt, vote, term))
	}
	if hasTerm {
		last, err := lastTerm(logs, snaps)
		if err != nil {
			return DamagedStore(path, dataDir, nodeID, err)
		}
		if last > term {
			return refuse(fmt.Errorf("%w: CurrentTerm %d is before the term %d of the last log entry or snapshot", ErrStableCorrupt, term, last))
		}
	}
	for _, k := range unsealed {
		if err := raw.Set(k, seal(k, values[string(k)])); err != nil {
			return fmt.Errorf("seal %s in %s: %w", k, path, err)
		}
	}
	return nil
}

// lastTerm is the term of the last entry of the log, or of the newest
// snapshot when it is newer (0 when there is neither).
func lastTerm(logs raft.LogStore, snaps raft.SnapshotStore) (uint64, error) {
	var term uint64
	last, err := logs.LastIndex()
	if err != nil {
		return 0, err
	}
	if last > 0 {
		var l raft.Log
		if err := logs.GetLog(last, &l); err != nil {
			return 0, fmt.Errorf("log entry %d: %w", last, err)
		}
		term = l.Term
	}
	metas, err := snaps.List()
	if err != nil {
		return 0, err
	}
	if len(metas) > 0 && metas[0].Term > term {
		term = metas[0].Term
	}
	return term, nil
}
