package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/test/jepsen/history"
)

func TestRecorderCutsTornTailAndContinuesOps(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	old := `{"t":1,"proc":"r1-0","kind":"invoke","op":7,"f":"read","key":"k"}` + "\n" +
		`{"t":2,"proc":"r1-1","kind":"invoke","op":3,"f":"read","key":"k"}` + "\n" +
		`{"t":3,"proc":"r2-0","kind":"invoke","op":99,"f":"read","key":"k"}` + "\n" +
		`{"t":4,"proc":"r1-1","kind":"ok","op":3,"f":"re` // killed while writing
	if err := os.WriteFile(path, []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := openRecorder(path, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	if err := rec.Write(history.Event{Proc: "r1-0", Kind: history.Invoke, Op: 8, F: fRead, Key: "k"}); err != nil {
		t.Fatal(err)
	}
	rec.Close()
	if err := rec.Write(history.Event{Proc: "r1-0", Kind: history.OK}); !errors.Is(err, errClosed) {
		t.Fatalf("write after close: %v, want errClosed", err)
	}
	evs, err := history.ReadFile(path)
	if err != nil {
		t.Fatalf("the history is unreadable after a restart on a torn file: %v", err)
	}
	if len(evs) != 4 || evs[3].Op != 8 || evs[3].T == 0 {
		t.Fatalf("events: %+v; want the 3 complete old ones and the new one", evs)
	}
	last, err := lastOps(path, "r1-")
	if err != nil {
		t.Fatal(err)
	}
	if len(last) != 2 || last["r1-0"] != 8 || last["r1-1"] != 3 {
		t.Fatalf("lastOps: %v, want r1-0:8 r1-1:3", last)
	}
	if last, err := lastOps(filepath.Join(t.TempDir(), "none"), "r1-"); err != nil || len(last) != 0 {
		t.Fatalf("lastOps of a missing file: %v, %v", last, err)
	}
}

func TestTrimTornTail(t *testing.T) {
	dir := t.TempDir()
	cases := []struct{ name, in, want string }{
		{"complete", "a\nb\n", "a\nb\n"},
		{"torn", "a\nb\nc", "a\nb\n"},
		{"only a torn line", "abc", ""},
		{"empty", "", ""},
	}
	for _, c := range cases {
		path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_"))
		if err := os.WriteFile(path, []byte(c.in), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := trimTornTail(path); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got, _ := os.ReadFile(path); string(got) != c.want {
			t.Errorf("%s: got %q, want %q", c.name, got, c.want)
		}
	}
	long := filepath.Join(dir, "long")
	if err := os.WriteFile(long, bytes.Repeat([]byte("x"), maxLine+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := trimTornTail(long); err == nil {
		t.Fatal("a last line longer than maxLine was cut; want an error")
	}
	if n, err := trimTornTail(filepath.Join(dir, "missing")); n != 0 || err != nil {
		t.Fatalf("missing file: %d, %v", n, err)
	}
}
