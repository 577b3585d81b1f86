package fsm

import (
	"slices"
	"sort"
	"strings"
)

// blockSize is the most records one block of a keyIndex holds.
const blockSize = 512

// keyIndex keeps the lease records ordered by key, next to the map that
// finds them, so that a listing walks from a cursor without copying or
// sorting the table. It is a list of sorted blocks of at most blockSize
// records, every key of a block below every key of the next: a new key
// costs a binary search and a move of at most one block and of the block
// list (a few thousand entries for a million keys), not of the table.
//
// It holds the same *Lease values as the map (never modified once
// stored). Machine changes it under m.mu and reads it under the read
// lock; its order depends on the keys alone, so it is the same on every
// replica.
type keyIndex struct {
	blocks [][]*Lease
}

// newKeyIndex returns an index of leases, which it sorts.
func newKeyIndex(leases ...*Lease) *keyIndex {
	sorted := slices.Clone(leases)
	slices.SortFunc(sorted, func(a, b *Lease) int { return strings.Compare(a.Key, b.Key) })
	x := &keyIndex{}
	// Blocks start half full, so that inserts do not split at once.
	for len(sorted) > 0 {
		n := min(len(sorted), blockSize/2)
		b := make([]*Lease, n, blockSize+1)
		copy(b, sorted[:n])
		x.blocks = append(x.blocks, b)
		sorted = sorted[n:]
	}
	return x
}

// search returns the block and the position in it of the first record
// whose key is key or after it; b is len(x.blocks) when every key is
// before key.
func (x *keyIndex) search(key string) (b, i int) {
	b = sort.Search(len(x.blocks), func(j int) bool {
		blk := x.blocks[j]
		return blk[len(blk)-1].Key >= key
	})
	if b == len(x.blocks) {
		return b, 0
	}
	blk := x.blocks[b]
	i = sort.Search(len(blk), func(j int) bool { return blk[j].Key >= key })
	return b, i
}

// put inserts l, or replaces the record of its key.
func (x *keyIndex) put(l *Lease) {
	if len(x.blocks) == 0 {
		x.blocks = append(x.blocks, append(make([]*Lease, 0, blockSize+1), l))
		return
	}
	b, i := x.search(l.Key)
	if b == len(x.blocks) {
		b = len(x.blocks) - 1
		i = len(x.blocks[b])
	}
	blk := x.blocks[b]
	if i < len(blk) && blk[i].Key == l.Key {
		blk[i] = l
		return
	}
	blk = slices.Insert(blk, i, l)
	if len(blk) <= blockSize {
		x.blocks[b] = blk
		return
	}
	// Split the full block in two halves.
	half := len(blk) / 2
	next := append(make([]*Lease, 0, blockSize+1), blk[half:]...)
	clear(blk[half:])
	x.blocks[b] = blk[:half]
	x.blocks = slices.Insert(x.blocks, b+1, next)
}

// remove deletes the record of key, if there is one.
func (x *keyIndex) remove(key string) {
	b, i := x.search(key)
	if b == len(x.blocks) || i == len(x.blocks[b]) || x.blocks[b][i].Key != key {
		return
	}
	blk := slices.Delete(x.blocks[b], i, i+1)
	if len(blk) == 0 {
		x.blocks = slices.Delete(x.blocks, b, b+1)
		return
	}
	x.blocks[b] = blk
}

// ascend calls fn with each record from the first whose key is from or
// after it, in key order, until fn returns false.
func (x *keyIndex) ascend(from string, fn func(*Lease) bool) {
	b, i := x.search(from)
	for ; b < len(x.blocks); b, i = b+1, 0 {
		for _, l := range x.blocks[b][i:] {
			if !fn(l) {
				return
			}
		}
	}
}
