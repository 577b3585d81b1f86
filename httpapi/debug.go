package httpapi

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"

	"github.com/tenure-io/tenure/client/wire"
)

// Bounds of a LogTail.
const (
	// DefaultLogTailLines and DefaultLogTailBytes: what a server keeps of
	// its recent log lines for GET /v1/debug/logs.
	DefaultLogTailLines = 1000
	DefaultLogTailBytes = 1 << 20
	// maxLogLineBytes bounds one kept line; a longer one is cut there.
	maxLogLineBytes = 16 << 10
)

// LogTail keeps the last log lines that were written to it, within a
// number of lines and of bytes, for GET /v1/debug/logs. Add it to the
// logger's output (io.MultiWriter); it is safe for concurrent use. A
// write need not be one whole line: a line is kept once its newline
// arrives.
type LogTail struct {
	mu       sync.Mutex
	maxLines int
	maxBytes int
	lines    [][]byte // ring: lines[start] is the oldest of n
	start, n int
	size     int    // bytes in lines
	partial  []byte // the line being written, up to maxLogLineBytes
	cut      bool   // partial was cut at maxLogLineBytes
}

// NewLogTail returns a LogTail that keeps at most maxLines lines and
// maxBytes bytes (both at least 1).
func NewLogTail(maxLines, maxBytes int) (*LogTail, error) {
	switch {
	case maxLines < 1:
		return nil, fmt.Errorf("log tail lines: %d must be at least 1", maxLines)
	case maxBytes < 1:
		return nil, fmt.Errorf("log tail bytes: %d must be at least 1", maxBytes)
	}
	return &LogTail{maxLines: maxLines, maxBytes: maxBytes, lines: make([][]byte, maxLines)}, nil
}

// Write keeps the whole lines of p (and holds back the rest until its
// newline comes). It never fails.
func (t *LogTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	rest := p
	for len(rest) > 0 {
		i := bytes.IndexByte(rest, '\n')
		chunk := rest
		if i >= 0 {
			chunk = rest[:i+1]
		}
		rest = rest[len(chunk):]
		n := min(len(chunk), maxLogLineBytes-len(t.partial))
		t.partial = append(t.partial, chunk[:n]...)
		t.cut = t.cut || n < len(chunk)
		if i >= 0 {
			line := t.partial
			if t.cut && line[len(line)-1] != '\n' {
				line = append(line, '\n')
			}
			t.push(line)
			t.partial, t.cut = nil, false
		}
	}
	return len(p), nil
}

// push appends one line, dropping the oldest past either bound.
func (t *LogTail) push(line []byte) {
	if len(line) > t.maxBytes {
		line = append(line[:t.maxBytes-1:t.maxBytes-1], '\n')
	}
	for t.n > 0 && (t.n == t.maxLines || t.size+len(line) > t.maxBytes) {
		t.size -= len(t.lines[t.start])
		t.lines[t.start] = nil
		t.start = (t.start + 1) % t.maxLines
		t.n--
	}
	t.lines[(t.start+t.n)%t.maxLines] = line
	t.n++
	t.size += len(line)
}

// Bytes returns the kept lines, oldest first.
func (t *LogTail) Bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]byte, 0, t.size)
	for i := 0; i < t.n; i++ {
		out = append(out, t.lines[(t.start+i)%t.maxLines]...)
	}
	return out
}

// profile answers GET /v1/debug/pprof/{profile}: the goroutine or heap
// profile of this process, in the runtime/pprof format (gzipped protocol
// buffers), or as text with ?debug=1 (goroutine: ?debug=2 gives every
// stack in full).
func (s *Server) profile(w http.ResponseWriter, r *http.Request) error {
	// wire.DebugProfiles: a snapshot each, cheap to take. CPU profiles
	// and traces, which run for a while and cost while they do, are left
	// out on purpose.
	name := pathVar(r, "profile")
	p := pprof.Lookup(name)
	if !slices.Contains(wire.DebugProfiles, name) || p == nil {
		return &apiError{code: wire.CodeNotFound, field: "profile",
			msg: fmt.Sprintf("profile: %q is not served, want one of %v", name, wire.DebugProfiles)}
	}
	debug := 0
	if v := r.URL.Query().Get("debug"); v != "" {
		d, err := strconv.Atoi(v)
		if err != nil || d < 0 || d > 2 {
			return badRequest(wire.CodeInvalidQuery, "debug", fmt.Sprintf("debug: %q must be 0 (runtime/pprof format), 1 or 2 (text)", v))
		}
		debug = d
	}
	var buf bytes.Buffer
	if err := p.WriteTo(&buf, debug); err != nil {
		return fmt.Errorf("profile %s: %w", name, err)
	}
	if debug == 0 {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.pprof"`, name))
	} else {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	}
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	_, err := io.Copy(w, &buf)
	if err != nil {
		s.log.Debug("profile answer not sent", "profile", name, "error", err)
	}
	return nil
}

// recentLogs answers GET /v1/debug/logs: this server's last log lines,
// oldest first, as they were written.
func (s *Server) recentLogs(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.LogTail == nil {
		return &apiError{code: wire.CodeNotFound, msg: "this server keeps no log lines"}
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusOK)
	w.Write(s.cfg.LogTail.Bytes())
	return nil
}
