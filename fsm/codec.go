package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// errShort is returned by the decoder when the input ends inside a field.
var errShort = errors.New("unexpected end of data")

// maxStringLen bounds every decoded string so that a corrupt length prefix
// cannot make the decoder allocate gigabytes.
const maxStringLen = 1 << 20

// encoder appends the primitive types of the wire format to a byte slice.
// Integers are unsigned varints; strings are a varint length and the bytes.
type encoder struct{ buf []byte }

func (e *encoder) byte(b byte)      { e.buf = append(e.buf, b) }
func (e *encoder) uvarint(v uint64) { e.buf = binary.AppendUvarint(e.buf, v) }
func (e *encoder) varint(v int64)   { e.buf = binary.AppendVarint(e.buf, v) }

func (e *encoder) string(s string) {
	e.uvarint(uint64(len(s)))
	e.buf = append(e.buf, s...)
}

func (e *encoder) bytes(b []byte) {
	e.uvarint(uint64(len(b)))
	e.buf = append(e.buf, b...)
}

func (e *encoder) bool(b bool) {
	if b {
		e.byte(1)
	} else {
		e.byte(0)
	}
}

func (e *encoder) strings(s []string) {
	e.uvarint(uint64(len(s)))
	for _, v := range s {
		e.string(v)
	}
}

// sortedKeysOf returns the keys of m in sorted order, never nil.
func sortedKeysOf[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// valuesByKey returns the values of m in the order of their keys (the
// tokens by accessor id, the policies and groups by name).
func valuesByKey[V any](m map[string]V) []V {
	out := make([]V, 0, len(m))
	for _, k := range sortedKeysOf(m) {
		out = append(out, m[k])
	}
	return out
}

// stringMap writes a map with its keys in sorted order, so that equal maps
// always encode to equal bytes.
func (e *encoder) stringMap(m map[string]string) {
	encodeSorted(e, m, func(k, v string) {
		e.string(k)
		e.string(v)
	})
}

// encodeSorted writes the number of entries of m, then each entry with
// write, in the order of their keys.
func encodeSorted[V any](e *encoder, m map[string]V, write func(k string, v V)) {
	keys := sortedKeysOf(m)
	e.uvarint(uint64(len(keys)))
	for _, k := range keys {
		write(k, m[k])
	}
}

// decoder reads what encoder wrote. The first error sticks: later reads
// return zero values, and err reports the first failure.
type decoder struct {
	buf []byte
	err error
}

func (d *decoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
}

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.buf) < 1 {
		d.fail(errShort)
		return 0
	}
	b := d.buf[0]
	d.buf = d.buf[1:]
	return b
}

func (d *decoder) uvarint() uint64 { return readVarint(d, binary.Uvarint, "uvarint") }
func (d *decoder) varint() int64   { return readVarint(d, binary.Varint, "varint") }

// readVarint reads one integer with read (binary.Uvarint or binary.Varint);
// what names it in the error.
func readVarint[T uint64 | int64](d *decoder, read func([]byte) (T, int), what string) T {
	if d.err != nil {
		return 0
	}
	v, n := read(d.buf)
	if n <= 0 {
		d.fail(fmt.Errorf("bad %s: %w", what, errShort))
		return 0
	}
	d.buf = d.buf[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > maxStringLen {
		d.fail(fmt.Errorf("length %d exceeds the limit %d", n, maxStringLen))
		return nil
	}
	if uint64(len(d.buf)) < n {
		d.fail(errShort)
		return nil
	}
	b := d.buf[:n:n]
	d.buf = d.buf[n:]
	return b
}

func (d *decoder) string() string { return string(d.bytes()) }

// listLen reads the length of a list, map or table whose every entry
// takes at least a byte; format, with %d for the length, names it in the
// error. It is 0 after an error.
func (d *decoder) listLen(format string) uint64 {
	return d.bounded(func(n uint64) error { return fmt.Errorf(format+": %w", n, errShort) })
}

// count is listLen for a section of a snapshot; what names its entries.
func (d *decoder) count(what string) uint64 {
	return d.bounded(func(n uint64) error { return fmt.Errorf("%d %s in %d bytes", n, what, len(d.buf)) })
}

// sortedEntries reads a count of entries (count, with what), each
// starting with a name that must come after the previous one in byte
// order; entry reads the rest of each. The error for a name out of order
// says "<what> %q out of order".
func (d *decoder) sortedEntries(what string, entry func(name string)) {
	n := d.count(what)
	var prev string
	for i := uint64(0); i < n && d.err == nil; i++ {
		name := d.string()
		if i > 0 && name <= prev {
			d.fail(fmt.Errorf("%s %q out of order", what, name))
		}
		prev = name
		entry(name)
	}
}

// bounded reads a length that must not exceed the bytes left, failing with
// tooLong otherwise; it is 0 after an error.
func (d *decoder) bounded(tooLong func(n uint64) error) uint64 {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.buf)) {
		d.fail(tooLong(n))
	}
	if d.err != nil {
		return 0
	}
	return n
}

func (d *decoder) stringMap() map[string]string {
	n := d.listLen("map of %d entries") // every entry takes at least two bytes
	if n == 0 {
		return nil
	}
	m := make(map[string]string, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		k := d.string()
		m[k] = d.string()
	}
	return m
}

func (d *decoder) bool() bool {
	switch b := d.byte(); b {
	case 0:
		return false
	case 1:
		return true
	default:
		d.fail(fmt.Errorf("bool byte %d", b))
		return false
	}
}

func (d *decoder) strings() []string {
	n := d.listLen("list of %d strings")
	if n == 0 {
		return nil
	}
	out := make([]string, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		out = append(out, d.string())
	}
	return out
}

// finish reports the first error, or an error if bytes are left over.
func (d *decoder) finish() error {
	if d.err == nil && len(d.buf) != 0 {
		d.fail(fmt.Errorf("%d trailing bytes", len(d.buf)))
	}
	return d.err
}
