// Package history is the record that the Jepsen suite's processes write and
// its checkers read: one JSON event per line, timed on CLOCK_MONOTONIC,
// which every process on the machine shares whatever network namespace it
// runs in.
//
// A process writes each event with one write(2) to a file opened with
// O_APPEND, so a process killed with SIGKILL loses at most the event it
// was writing, and ReadFile skips a torn last line.
package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Kinds of events. Operations of the lease register pair an Invoke with one
// of OK, Fail or Info (same Proc and Op); Info means the outcome is
// unknown (a timeout, leadership lost), never that it failed.
const (
	Invoke = "invoke"
	OK     = "ok"
	Fail   = "fail"
	Info   = "info"

	// Holder events of the mutex, election and placement workloads.
	Acquired = "acquired" // the acquire reply arrived: Token, Deadline
	Renewed  = "renewed"  // a renewal succeeded: Deadline moved forward
	Belief   = "belief"   // checked Err()==nil at T, about to act; Deadline as known then
	Lost     = "lost"     // the lease ended without release: Err
	Released = "released" // T is when the release was sent
	// Revoked: an operator's revoke (not forced) of Key was answered and
	// named this lease (Holder, Token) among those it ended; T is when
	// the answer arrived. The mutex workload's revoker writes it.
	Revoked = "revoked"
	// Prepared: a placement worker prepared Key before it moves to it (a
	// warm hand-off, worker.WithPrepare); T is when the prepare ended.
	// It holds no lease: mutual exclusion ignores it.
	Prepared = "prepared"

	// Store events (fenced register).
	StoreRead  = "store-read"  // Value, Token (highest seen)
	StoreWrite = "store-write" // Token, Base, Value, Accepted, Current (value before)
	// Forged: the adversary (jagent forge) accepted a connection at an
	// address it announced as a server's; F says which (raft or http).
	Forged = "forged"
)

// Event is one line of a history. Fields unused by a kind are omitted.
type Event struct {
	T        int64  `json:"t"`             // CLOCK_MONOTONIC, nanoseconds
	Proc     string `json:"proc"`          // the logical process (sequential)
	Kind     string `json:"kind"`          // one of the constants above
	Op       int64  `json:"op,omitempty"`  // pairs an invoke with its completion
	F        string `json:"f,omitempty"`   // acquire, renew, release, read
	Key      string `json:"key,omitempty"` // lease key
	Holder   string `json:"holder,omitempty"`
	Token    uint64 `json:"token,omitempty"`
	TTL      int64  `json:"ttl,omitempty"`      // nanoseconds
	Deadline int64  `json:"deadline,omitempty"` // CLOCK_MONOTONIC ns: SentAt + TTL − margin
	State    string `json:"state,omitempty"`    // reads: held or free
	Created  bool   `json:"created,omitempty"`  // acquire: 201, a new grant
	Value    int64  `json:"value,omitempty"`
	Base     int64  `json:"base,omitempty"`
	Current  int64  `json:"current,omitempty"`
	Accepted bool   `json:"accepted,omitempty"`
	Err      string `json:"err,omitempty"`
}

// Now reads CLOCK_MONOTONIC.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic(fmt.Sprintf("clock_gettime: %v", err))
	}
	return ts.Nano()
}

var base = struct {
	mono int64
	at   time.Time
}{Now(), time.Now()}

// Mono converts a time.Time that carries a monotonic reading (time.Now and
// what is derived from it with Add) to CLOCK_MONOTONIC nanoseconds. Go's
// monotonic clock is CLOCK_MONOTONIC, so this is exact up to the
// nanoseconds between the two readings taken at start.
func Mono(t time.Time) int64 { return base.mono + int64(t.Sub(base.at)) }

// Writer appends events to a file; it is safe for concurrent use.
type Writer struct {
	mu sync.Mutex
	f  *os.File
}

// Create opens path for appending, creating it if needed.
func Create(path string) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &Writer{f: f}, nil
}

// Write appends e with one write(2). A zero T is set to Now.
func (w *Writer) Write(e Event) error {
	if e.T == 0 {
		e.T = Now()
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	_, err = w.f.Write(b)
	return err
}

// Close closes the file.
func (w *Writer) Close() error { return w.f.Close() }

// ReadFile reads every complete event of a history file. A last line
// without its newline (a writer killed mid-write) is skipped; any other bad
// line is an error naming its line number.
func ReadFile(path string) ([]Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f)
}

// Read is ReadFile on a reader.
func Read(r io.Reader) ([]Event, error) {
	var out []Event
	br := bufio.NewReader(r)
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return out, nil // a torn last line, if any, is dropped
		}
		if err != nil {
			return nil, err
		}
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			continue
		}
		var e Event
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, e)
	}
}
