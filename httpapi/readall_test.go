package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
)

// TestARestoreBodyIsReadIntoOneBuffer: a backup uploaded for a restore is
// read into one buffer of its declared length, not through a growing
// buffer that allocates twice its size again (fresh memory that stalled
// a leader past its Raft timings while it read a 39 MB backup).
func TestARestoreBodyIsReadIntoOneBuffer(t *testing.T) {
	data := bytes.Repeat([]byte{'b'}, 8<<20)
	read := func(declared int64) (uint64, []byte) {
		r := httptest.NewRequest(http.MethodPut, "/v1/snapshot", io.NopCloser(bytes.NewReader(data)))
		r.ContentLength = declared
		r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, bodyLimit(r))
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		b, err := readAll(r)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatal(err)
		}
		return after.TotalAlloc - before.TotalAlloc, b
	}
	got, b := read(int64(len(data)))
	if !bytes.Equal(b, data) {
		t.Fatalf("read %d bytes, not the body's %d", len(b), len(data))
	}
	if limit := uint64(len(data)) + uint64(len(data))/8; got > limit {
		t.Errorf("reading a body of %d declared bytes allocated %d, want at most %d", len(data), got, limit)
	}
	// A length that is not declared, or that is past the route's limit,
	// is not taken ahead: the body is read as it comes, within the limit.
	for _, declared := range []int64{-1, bodyLimit(httptest.NewRequest(http.MethodPut, "/v1/snapshot", nil)) + 1} {
		if _, b := read(declared); !bytes.Equal(b, data) {
			t.Errorf("declared %d: read %d bytes, not the body's %d", declared, len(b), len(data))
		}
	}
}
