package main

import (
	"cmp"
	"strings"
	"unicode/utf8"
)

// compareCounting orders names the way people count: a run of digits
// compares by its value, so partitions/2 comes before partitions/10 (and,
// of equal values, the one with fewer leading zeros first); the rest
// compares by code point. Kept here rather than taken from a library: it
// is these few lines, and only `groups get` needs it.
func compareCounting(a, b string) int {
	for a != "" && b != "" {
		if da, db := digits(a), digits(b); da > 0 && db > 0 {
			na, nb := strings.TrimLeft(a[:da], "0"), strings.TrimLeft(b[:db], "0")
			if c := cmp.Or(cmp.Compare(len(na), len(nb)), strings.Compare(na, nb), cmp.Compare(da, db)); c != 0 {
				return c
			}
			a, b = a[da:], b[db:]
			continue
		}
		ra, sa := utf8.DecodeRuneInString(a)
		rb, sb := utf8.DecodeRuneInString(b)
		if ra != rb {
			return cmp.Compare(ra, rb)
		}
		a, b = a[sa:], b[sb:]
	}
	return cmp.Compare(len(a), len(b))
}

// digits is the length of the run of ASCII digits s starts with.
func digits(s string) int {
	n := 0
	for n < len(s) && '0' <= s[n] && s[n] <= '9' {
		n++
	}
	return n
}
