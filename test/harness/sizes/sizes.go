// Package sizes reads the size lists of the Scale benchmarks (-scale
// 10000,100000 in fsm and cluster). It imports nothing of tenure, so the
// benchmarks inside package fsm can use it.
package sizes

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse reads a comma-separated list of positive counts; flag names the
// flag in the error.
func Parse(flag, list string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("-%s: %q is not a positive count", flag, s)
		}
		out = append(out, n)
	}
	return out, nil
}
