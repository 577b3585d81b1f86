package check

import (
	"fmt"
	"os"
	"strings"
)

// Result is the verdict of one checker.
type Result struct {
	Name string // e.g. "linearizable lease register"
	// Valid is false when at least one violation was found, or when the
	// checker could not decide (see Unknown): what was not checked is no
	// pass.
	Valid bool
	// Unknown is set when the checker ran out of time before deciding;
	// Valid is then false, a violation says that the check was not made
	// and Notes say what was left undecided. A negative control whose
	// checker is Unknown has caught nothing.
	Unknown bool
	// Ops is the number of operations or events examined.
	Ops int
	// Violations are human-readable, each naming the process, key, token
	// and times (ms relative to the first event) involved.
	Violations []string
	// Notes carry context: counts of indeterminate operations, per-node
	// facts, what was left out and why.
	Notes []string
}

// maxListed bounds the violations a Result lists; the rest are counted in
// a Note so that a badly broken run still yields a readable summary.
const maxListed = 200

// verdict accumulates a Result.
type verdict struct {
	Result
	dropped int
}

func newVerdict(name string) *verdict {
	return &verdict{Result: Result{Name: name, Valid: true}}
}

// fail records a violation.
func (v *verdict) fail(format string, args ...any) {
	v.Valid = false
	if len(v.Violations) >= maxListed {
		v.dropped++
		return
	}
	v.Violations = append(v.Violations, fmt.Sprintf(format, args...))
}

// note records a note.
func (v *verdict) note(format string, args ...any) {
	v.Notes = append(v.Notes, fmt.Sprintf(format, args...))
}

// done returns the Result.
func (v *verdict) done() Result {
	if v.dropped > 0 {
		v.note("%d more violations not listed", v.dropped)
	}
	return v.Result
}

// String renders the result on several lines: a verdict line, then one
// line per violation and per note.
func (r Result) String() string {
	var b strings.Builder
	status := "PASS"
	switch {
	case r.Unknown:
		status = "UNKNOWN"
	case !r.Valid:
		status = "FAIL"
	}
	fmt.Fprintf(&b, "%-7s %s (%d examined", status, r.Name, r.Ops)
	if n := len(r.Violations); n > 0 {
		fmt.Fprintf(&b, ", %d violations listed", n)
	}
	b.WriteString(")\n")
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "  violation: %s\n", v)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	return b.String()
}

// WriteSummary writes every result to path as text, followed by an
// overall verdict line: FAIL if any result is invalid or undecided (an
// undecided check is no pass), else PASS.
func WriteSummary(path string, results []Result) error {
	var b strings.Builder
	overall := "PASS"
	for _, r := range results {
		b.WriteString(r.String())
		if !r.Valid || r.Unknown {
			overall = "FAIL"
		}
	}
	fmt.Fprintf(&b, "\noverall: %s (%d checks)\n", overall, len(results))
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

// clock renders CLOCK_MONOTONIC times relative to the first event.
type clock struct{ t0 int64 }

// ms renders t as milliseconds after the first event.
func (c clock) ms(t int64) string {
	return fmt.Sprintf("%.1fms", float64(t-c.t0)/1e6)
}

// dur renders a duration given in nanoseconds as milliseconds.
func dur(ns int64) string { return fmt.Sprintf("%.1fms", float64(ns)/1e6) }
