package fsm

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sort"

	"github.com/hashicorp/raft"
)

// Snapshot format, version 9 (version 1 lacks the placement part, version 2
// the ACL part, version 3 the group settings and the ending leases,
// version 4 the cluster id, version 5 the lease secrets' hashes, version
// 6 the backup key, version 7 the groups' balance, version 8 the keys
// being prepared):
//
//	magic   [4]byte  "TNRS"
//	version uint16   big endian
//	index   uint64   big endian: last applied Raft index
//	term    uint64   big endian: its term
//	body    varints: last token, established term, lease index, lease
//	        count, then each lease (sorted by key);
//	        v2: group index, group count, each group (sorted by name),
//	        control count, each key control (sorted by key), drained
//	        workers (sorted);
//	        v3: ACL bootstrapped, ACL index, policy count, each policy
//	        (sorted by name), token count, each token (sorted by accessor
//	        id; secret hashes only), worker registration count, each
//	        registration (sorted by worker)
//	        v4: group settings count, each group's settings and stuck
//	        workers (sorted by name; only groups that have any); then the
//	        ending lease count, each ending lease (sorted by key) as key
//	        and ending reason (encodeEnding)
//	        v5: cluster id (a string, empty when none was applied)
//	        v6: the count of leases with a secret hash, each such lease
//	        (sorted by key) as key and hash (encodeSecrets); leases read
//	        from versions 1 to 5 have none
//	        v7: backup key (bytes, empty when none was applied, and
//	        always empty in a backup: see Machine.Backup)
//	        v8: group balance count, each group's balance (sorted by
//	        name; only groups that have one: encodeBalances)
//	        v9: count of groups with keys being prepared, each group's
//	        name and Prepare map (sorted by name: encodePrepares)
//	crc     uint32   big endian: CRC-32C of everything before it
//
// Every version ever written stays readable; testdata holds a golden file
// of each.
const (
	snapshotMagic   = "TNRS"
	snapshotVersion = 9
	headerLen       = 4 + 2 + 8 + 8
	// maxSnapshot bounds what readSnapshot will buffer.
	maxSnapshot = 1 << 31
	// maxSnapshotHint bounds the buffer readSnapshot takes ahead of
	// reading: a larger snapshot grows it as it arrives.
	maxSnapshotHint = 256 << 20
)

// ErrBadSnapshot is wrapped by every readSnapshot error.
var ErrBadSnapshot = errors.New("bad snapshot")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// state is what a snapshot carries.
type state struct {
	lastToken       uint64
	establishedTerm uint64
	leaseIndex      uint64
	leases          []*Lease
	groupIndex      uint64
	groups          []*Group
	controls        map[string]KeyControl
	drained         []string
	// acl is empty (not nil maps) when read from versions 1 and 2.
	acl aclState
	// clusterID is "" when read from versions 1 to 4.
	clusterID string
	// backupKey is nil when read from versions 1 to 6, and from a backup.
	backupKey []byte
}

type snapshot struct {
	state       state
	index, term uint64
}

// Persist writes the snapshot to sink. Raft calls it on its own goroutine,
// concurrently with Apply.
func (s *snapshot) Persist(sink raft.SnapshotSink) error {
	if _, err := sink.Write(encodeSnapshot(s.state, s.index, s.term)); err != nil {
		sink.Cancel()
		return fmt.Errorf("write snapshot: %w", err)
	}
	return sink.Close()
}

// Release is a no-op: the snapshot holds no resources.
func (s *snapshot) Release() {}

func encodeSnapshot(st state, index, term uint64) []byte {
	return appendSnapshot(make([]byte, 0, st.encodedSize()), st, index, term)
}

// appendSnapshot appends the snapshot of st to dst, whose spare capacity
// should hold it: a state of tens of megabytes is then written into one
// allocation instead of a growing buffer's successive copies (twice its
// size again, in fresh memory that a process pays for in page faults,
// which stalled a leader's heartbeats for over 100 ms on two cores).
func appendSnapshot(dst []byte, st state, index, term uint64) []byte {
	sort.Slice(st.leases, func(i, j int) bool { return st.leases[i].Key < st.leases[j].Key })
	start := len(dst)
	e := &encoder{buf: dst}
	e.buf = append(e.buf, snapshotMagic...)
	e.buf = binary.BigEndian.AppendUint16(e.buf, snapshotVersion)
	e.buf = binary.BigEndian.AppendUint64(e.buf, index)
	e.buf = binary.BigEndian.AppendUint64(e.buf, term)
	e.uvarint(st.lastToken)
	e.uvarint(st.establishedTerm)
	e.uvarint(st.leaseIndex)
	e.uvarint(uint64(len(st.leases)))
	for _, l := range st.leases {
		l.encode(e)
	}
	encodePlacement(e, st)
	encodeACL(e, st.acl)
	encodeGroupSettings(e, st)
	encodeEnding(e, st.leases)
	e.string(st.clusterID)
	encodeSecrets(e, st.leases)
	e.bytes(st.backupKey)
	encodeBalances(e, st)
	encodePrepares(e, st)
	return binary.BigEndian.AppendUint32(e.buf, crc32.Checksum(e.buf[start:], castagnoli))
}

// encodedSize is about the size of st's snapshot, a little more when
// its leases hold the bulk of it: each lease's record, ending and secret
// hash, with room for the rest.
func (st state) encodedSize() int {
	n := headerLen + 64<<10
	for _, l := range st.leases {
		n += l.encodedSize()
	}
	return n
}

// encodedSize is about what l takes in a snapshot: its record, and its
// key again in the endings and secrets, each with its lengths and numbers.
func (l *Lease) encodedSize() int {
	n := 112 + 3*len(l.Key) + len(l.Holder)
	for k, v := range l.Metadata {
		n += len(k) + len(v) + 4
	}
	return n
}

// readSnapshot decodes a snapshot that Persist wrote, with the index and term
// in its header. It never panics; its errors wrap ErrBadSnapshot.
//
// sizeHint is about the snapshot's size, if known (0 if not): the buffer
// starts at it, bounded, rather than growing through copies.
func readSnapshot(r io.Reader, sizeHint int) (st state, index, term uint64, err error) {
	buf := bytes.NewBuffer(make([]byte, 0, min(max(sizeHint, 0), maxSnapshotHint)+bytes.MinRead))
	_, err = buf.ReadFrom(io.LimitReader(r, maxSnapshot))
	b := buf.Bytes()
	if err != nil {
		return state{}, 0, 0, fmt.Errorf("%w: read: %w", ErrBadSnapshot, err)
	}
	return decodeSnapshot(b)
}

func decodeSnapshot(b []byte) (st state, index, term uint64, err error) {
	if len(b) < headerLen+4 {
		return state{}, 0, 0, fmt.Errorf("%w: %d bytes is shorter than a header", ErrBadSnapshot, len(b))
	}
	if string(b[:4]) != snapshotMagic {
		return state{}, 0, 0, fmt.Errorf("%w: magic %q, want %q", ErrBadSnapshot, b[:4], snapshotMagic)
	}
	version := binary.BigEndian.Uint16(b[4:6])
	if version < 1 || version > snapshotVersion {
		return state{}, 0, 0, fmt.Errorf("%w: format version %d, this build reads 1 to %d", ErrBadSnapshot, version, snapshotVersion)
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return state{}, 0, 0, fmt.Errorf("%w: checksum %08x, want %08x", ErrBadSnapshot, got, sum)
	}
	index = binary.BigEndian.Uint64(b[6:14])
	term = binary.BigEndian.Uint64(b[14:22])
	d := &decoder{buf: body[headerLen:]}
	st.lastToken = d.uvarint()
	st.establishedTerm = d.uvarint()
	st.leaseIndex = d.uvarint()
	n := d.count("leases")
	st.leases = make([]*Lease, 0, n)
	var prev string
	for i := uint64(0); i < n && d.err == nil; i++ {
		l := decodeLease(d)
		if d.err != nil {
			break
		}
		if i > 0 && l.Key <= prev {
			d.fail(fmt.Errorf("lease %q out of order after %q", l.Key, prev))
		}
		if l.Token > st.lastToken {
			d.fail(fmt.Errorf("lease %q has token %d above the counter %d", l.Key, l.Token, st.lastToken))
		}
		prev = l.Key
		st.leases = append(st.leases, l)
	}
	if version >= 2 && d.err == nil {
		decodePlacement(d, &st)
	}
	st.acl = newACLState()
	if version >= 3 && d.err == nil {
		st.acl = decodeACL(d)
	}
	if version >= 4 && d.err == nil {
		decodeGroupSettings(d, &st)
		decodeEnding(d, &st)
	}
	if version >= 5 && d.err == nil {
		st.clusterID = d.string()
	}
	if version >= 6 && d.err == nil {
		decodeSecrets(d, &st)
	}
	if version >= 7 && d.err == nil {
		if k := d.bytes(); len(k) > 0 {
			if len(k) != BackupKeyLen {
				d.fail(fmt.Errorf("backup key of %d bytes, want %d", len(k), BackupKeyLen))
			}
			st.backupKey = append([]byte(nil), k...)
		}
	}
	if version >= 8 && d.err == nil {
		decodeBalances(d, &st)
	}
	if version >= 9 && d.err == nil {
		decodePrepares(d, &st)
	}
	if err := d.finish(); err != nil {
		return state{}, 0, 0, fmt.Errorf("%w: %w", ErrBadSnapshot, err)
	}
	return st, index, term, nil
}

// encodeSecrets writes the secret hashes of leases, sorted by key: their
// count, then key and hash of each lease that has one.
func encodeSecrets(e *encoder, leases []*Lease) {
	encodeLeasesWith(e, leases, func(l *Lease) bool { return l.SecretHash != "" }, func(l *Lease) { e.string(l.SecretHash) })
}

// encodeLeasesWith writes the count of leases that has picks, then the
// key of each, in order, followed by what write writes of it.
func encodeLeasesWith(e *encoder, leases []*Lease, has func(*Lease) bool, write func(*Lease)) {
	n := 0
	for _, l := range leases {
		if has(l) {
			n++
		}
	}
	e.uvarint(uint64(n))
	for _, l := range leases {
		if has(l) {
			e.string(l.Key)
			write(l)
		}
	}
}

// decodeSecrets reads what encodeSecrets wrote into the leases of st,
// which must be held leases of st, in key order, each once.
func decodeSecrets(d *decoder, st *state) {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(st.leases)) {
		d.fail(fmt.Errorf("%d secret hashes for %d leases", n, len(st.leases)))
	}
	j := 0 // st.leases is sorted by key
	for i := uint64(0); i < n && d.err == nil; i++ {
		key, hash := d.string(), d.secretHash()
		if d.err != nil {
			return
		}
		for j < len(st.leases) && st.leases[j].Key < key {
			j++
		}
		if j == len(st.leases) || st.leases[j].Key != key {
			d.fail(fmt.Errorf("secret hash of %q: no such lease, or out of order", key))
			return
		}
		l := st.leases[j]
		if !l.Held {
			d.fail(fmt.Errorf("secret hash of %q: the lease is free", key))
			return
		}
		l.SecretHash = hash
		j++
	}
}
