package jepsen

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// row is the outcome as one line of the results table: scenario,
// operations, faults, violations.
func (o *outcome) row() string {
	v := "none"
	if vs := o.violations(); len(vs) > 0 {
		v = strings.Join(vs, "; ")
	}
	if o.Config.Expect != "" {
		v = "expected " + o.Config.Expect + " → found: " + v
	}
	var kinds []string
	seen := map[string]int{}
	for _, e := range o.Schedule {
		seen[e.Nemesis]++
	}
	for k, n := range seen {
		kinds = append(kinds, fmt.Sprintf("%s×%d", k, n))
	}
	sort.Strings(kinds)
	var rec []string
	for k, d := range o.Recovery {
		rec = append(rec, fmt.Sprintf("%s %.1fs", k, d.Seconds()))
	}
	sort.Strings(rec)
	return fmt.Sprintf("| %s (%d servers, seed %d) | %d | %d: %s | %s | %s | %s |",
		o.Config.Name, o.Config.Servers, o.Config.Seed, o.Ops, o.Faults, strings.Join(kinds, ", "), v,
		strings.Join(rec, "; "), o.Duration.Round(time.Second))
}

func writeTable(path string, os_ []*outcome) error {
	var b strings.Builder
	b.WriteString("| scenario | operations | faults | violations | recovery after heal | wall time |\n|---|---|---|---|---|---|\n")
	for _, o := range os_ {
		b.WriteString(o.row() + "\n")
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// pruneResults keeps the newest keep suite directories under dir.
func pruneResults(dir string, keep int) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var names []string
	for _, e := range ents {
		if e.IsDir() && strings.Contains(e.Name(), "-seed") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for len(names) > keep {
		os.RemoveAll(filepath.Join(dir, names[0]))
		names = names[1:]
	}
}
