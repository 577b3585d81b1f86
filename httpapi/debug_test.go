package httpapi

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/client"
)

// A LogTail keeps the last whole lines within its bounds of lines and of
// bytes, cuts a line that is too long, and joins lines written in pieces.
func TestLogTailBounds(t *testing.T) {
	cases := []struct {
		name         string
		lines, bytes int
		writes       []string
		want         string
	}{
		{name: "keeps the last lines", lines: 2, bytes: 1 << 10, writes: []string{"a\n", "b\n", "c\n"}, want: "b\nc\n"},
		{name: "several lines in one write", lines: 3, bytes: 1 << 10, writes: []string{"a\nb\nc\nd\n"}, want: "b\nc\nd\n"},
		{name: "a line in pieces", lines: 3, bytes: 1 << 10, writes: []string{"he", "llo", "\nwor", "ld\n", "part"}, want: "hello\nworld\n"},
		{name: "bounded in bytes", lines: 100, bytes: 8, writes: []string{"aaa\n", "bbb\n", "ccc\n"}, want: "bbb\nccc\n"},
		{name: "a line longer than the byte bound", lines: 100, bytes: 4, writes: []string{"abcdefgh\n"}, want: "abc\n"},
		{name: "a line longer than a line may be", lines: 2, bytes: 1 << 20, writes: []string{strings.Repeat("x", maxLogLineBytes+10) + "\n"}, want: strings.Repeat("x", maxLogLineBytes) + "\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tail, err := NewLogTail(tc.lines, tc.bytes)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.writes {
				if n, err := tail.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write(%q) = %d, %v", w, n, err)
				}
			}
			if got := string(tail.Bytes()); got != tc.want {
				t.Errorf("kept %q, want %q", got, tc.want)
			}
		})
	}
	for _, bad := range [][2]int{{0, 10}, {10, 0}} {
		if _, err := NewLogTail(bad[0], bad[1]); err == nil {
			t.Errorf("NewLogTail(%d, %d) succeeded, want an error", bad[0], bad[1])
		}
	}
}

// The debug routes serve the goroutine and heap profiles in the pprof
// format (gzip) or as text, the recent log lines, and refuse other
// profiles naming the ones served.
func TestDebugRoutes(t *testing.T) {
	tail, _ := NewLogTail(10, 1<<10)
	fmt.Fprintf(tail, "first line\nsecond line\n")
	cfg := DefaultConfig()
	cfg.Node = (&fakeReplica{}).node()
	cfg.LogTail = tail
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}
	for _, p := range client.DebugProfiles {
		if rec := get("/v1/debug/pprof/" + p); rec.Code != 200 || !bytes.HasPrefix(rec.Body.Bytes(), []byte{0x1f, 0x8b}) {
			t.Errorf("%s profile: %d, %d bytes starting %q; want 200 and gzip", p, rec.Code, rec.Body.Len(), rec.Body.Bytes()[:min(4, rec.Body.Len())])
		}
	}
	if rec := get("/v1/debug/pprof/goroutine?debug=1"); rec.Code != 200 || !strings.Contains(rec.Body.String(), "goroutine profile:") {
		t.Errorf("goroutine profile as text: %d %.80q", rec.Code, rec.Body.String())
	}
	if rec := get("/v1/debug/pprof/profile"); rec.Code != 404 || !strings.Contains(rec.Body.String(), "goroutine heap") {
		t.Errorf("cpu profile: %d %s; want 404 naming the profiles served", rec.Code, rec.Body.String())
	}
	if rec := get("/v1/debug/pprof/heap?debug=7"); rec.Code != 400 || !strings.Contains(rec.Body.String(), "debug") {
		t.Errorf("debug=7: %d %s; want 400 naming debug", rec.Code, rec.Body.String())
	}
	if rec := get("/v1/debug/logs"); rec.Code != 200 || rec.Body.String() != "first line\nsecond line\n" {
		t.Errorf("logs: %d %q", rec.Code, rec.Body.String())
	}
	cfg.LogTail = nil
	srv, _ = New(cfg)
	if rec := get("/v1/debug/logs"); rec.Code != 404 {
		t.Errorf("logs of a server without a tail: %d %s; want 404", rec.Code, rec.Body.String())
	}
}
