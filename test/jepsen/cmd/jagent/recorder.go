package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/test/jepsen/history"
)

// errClosed is the error of a write after the recorder was closed.
var errClosed = errors.New("history closed")

// maxLine bounds the tail that openRecorder inspects for a torn line; an
// event is far shorter.
const maxLine = 64 << 10

// recorder is the history of one agent process. It is safe for concurrent
// use. It logs the first failed write (every later event may be lost too,
// which the log must say), and refuses writes once closed, so that a
// goroutine still winding down at exit cannot write to a closed file.
type recorder struct {
	log hclog.Logger

	mu     sync.Mutex
	w      *history.Writer
	closed bool
	failed bool
}

// openRecorder opens path for appending. When the file exists and ends
// with a line without its newline (an agent killed while writing), that
// torn line is cut off first: appending after it would glue it to the next
// event and make the file unreadable.
func openRecorder(path string, log hclog.Logger) (*recorder, error) {
	cut, err := trimTornTail(path)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	if cut > 0 {
		log.Warn("cut off a torn last line of the history", "path", path, "bytes", cut)
	}
	w, err := history.Create(path)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	return &recorder{log: log, w: w}, nil
}

// Write appends e; a zero e.T is set to history.Now() at the write.
func (r *recorder) Write(e history.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return errClosed
	}
	err := r.w.Write(e)
	if err != nil && !r.failed {
		r.failed = true
		r.log.Error("writing the history failed; events may be missing from now on", "error", err)
	}
	return err
}

// Close closes the file; later writes fail with errClosed.
func (r *recorder) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil
	}
	r.closed = true
	return r.w.Close()
}

// trimTornTail truncates the file at path after its last newline when its
// last byte is not one, and returns how many bytes it cut. A missing or
// empty file is left alone.
func trimTornTail(path string) (int64, error) {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size := st.Size()
	if size == 0 {
		return 0, nil
	}
	n := min(size, maxLine)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, size-n); err != nil {
		return 0, fmt.Errorf("read the last %d bytes: %w", n, err)
	}
	if buf[n-1] == '\n' {
		return 0, nil
	}
	keep := int64(0)
	if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
		keep = size - n + int64(i) + 1
	} else if size > maxLine {
		return 0, fmt.Errorf("the last line is longer than %d bytes: not a history", maxLine)
	}
	if err := f.Truncate(keep); err != nil {
		return 0, fmt.Errorf("cut the torn last line: %w", err)
	}
	return size - keep, nil
}

// lastOps returns, for each Proc of the history at path that starts with
// prefix, the highest Op it used: a register agent started again on the
// same file continues from there, so that an invoke of its previous life
// that never completed is never paired with a completion of this one. A
// missing file has none.
func lastOps(path, prefix string) (map[string]int64, error) {
	evs, err := history.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]int64{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", path, err)
	}
	out := make(map[string]int64)
	for _, e := range evs {
		if strings.HasPrefix(e.Proc, prefix) && e.Op > out[e.Proc] {
			out[e.Proc] = e.Op
		}
	}
	return out, nil
}
