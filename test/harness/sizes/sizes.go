// Package sizes reads the size lists of the Scale benchmarks (-scale
// 10000,100000 in fsm and cluster) and measures the heap they leave. It
// imports nothing of tenure, so the benchmarks inside package fsm can use
// it.
package sizes

import (
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// Scale defines the -scale flag of a package's Scale benchmarks, with def
// as its default list, and returns what a benchmark calls to read it: the
// counts, or the benchmark fails on a bad list.
func Scale(def string) func(b *testing.B) []int {
	list := flag.String("scale", def, "comma-separated lease counts for the Scale benchmarks")
	return func(b *testing.B) []int {
		b.Helper()
		out, err := Parse("scale", *list)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
}

// Parse reads a comma-separated list of positive counts; name names the
// flag in the error.
func Parse(name, list string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-%s: %q is not a positive count", name, s)
		}
		out = append(out, n)
	}
	return out, nil
}

// HeapInUse is the live heap after a full collection.
func HeapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
