// Package sidebyside is the side-by-side fault test of locks: one
// workload, one nemesis schedule and one seed, run against etcd's
// concurrency.Mutex and tenure's lease, each with the store unfenced and
// fenced, in the fault suite's network namespaces (test/jepsen/netns).
//
// The workload: agents (cmd/lockagent) take the lock, read a counter from
// a real PostgreSQL server, check that they still hold the lock, and write
// the counter plus one with a row of history, in one transaction. The
// nemesis pauses an agent (SIGSTOP) just after its check, past the lock's
// TTL, as a GC pause or a stopped VM would, and cuts agents off from the
// lock servers for longer than the TTL. Check counts, from the store's
// own history, the increments lost and the writes made by a holder that
// had been superseded.
package sidebyside

import (
	"fmt"
	"sort"
)

// Row is one committed write of the history table, in commit order (the
// counter row's lock orders the writes; seq is taken after it).
type Row struct {
	Seq   int64
	Agent string
	Op    int64
	Token uint64 // the lock's token the writer held (fenced or not)
	Read  int64  // the counter it read
	Wrote int64  // what it wrote: Read + 1
}

// AgentLine is one line an agent (cmd/lockagent) writes on stdout, as
// JSON: Ev "writing" with Op before each write, then Ev "done" with the
// agent's counts.
type AgentLine struct {
	Ev      string `json:"ev"`
	Op      int    `json:"op,omitempty"`
	Ops     int    `json:"ops,omitempty"`      // writes committed
	Refused int    `json:"refused,omitempty"`  // writes the fence refused
	Lost    int    `json:"lost,omitempty"`     // holdings that ended before the write (skipped)
	Failed  int    `json:"failed,omitempty"`   // writes or locks that failed otherwise
	LastErr string `json:"last_err,omitempty"` // the last such failure
}

// Anomalies are what Check finds in one arm's history.
type Anomalies struct {
	// Committed is the number of writes the store committed; Final the
	// counter's value at the end (from 0).
	Committed int
	Final     int64
	// Lost is the increments lost: committed writes whose effect a later
	// write from an older read overwrote (Committed - Final).
	Lost int
	// Doubled is the writes that wrote a counter value another write had
	// already written: after a write from a stale read set the counter
	// back, the writes that follow write values again.
	Doubled int
	// Superseded is the writes committed after a write with a higher
	// token: writes of a holder whose lock had passed to another holder,
	// who had written already.
	Superseded int
}

// Bad reports whether any anomaly was found.
func (a Anomalies) Bad() bool { return a.Lost > 0 || a.Doubled > 0 || a.Superseded > 0 }

func (a Anomalies) String() string {
	return fmt.Sprintf("%d writes committed, counter %d: %d lost, %d doubled, %d by a superseded holder",
		a.Committed, a.Final, a.Lost, a.Doubled, a.Superseded)
}

// Check reads the history of one arm: rows in any order (sorted here by
// Seq) and the counter's final value.
func Check(rows []Row, final int64) Anomalies {
	rows = append([]Row(nil), rows...)
	sort.Slice(rows, func(i, j int) bool { return rows[i].Seq < rows[j].Seq })
	a := Anomalies{Committed: len(rows), Final: final}
	a.Lost = max(len(rows)-int(final), 0)
	written := make(map[int64]bool, len(rows))
	var highest uint64
	for _, r := range rows {
		if written[r.Wrote] {
			a.Doubled++
		}
		written[r.Wrote] = true
		if r.Token < highest {
			a.Superseded++
		}
		highest = max(highest, r.Token)
	}
	return a
}
