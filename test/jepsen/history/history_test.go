package history

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestWriteReadSkipsTornLastLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.jsonl")
	w, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []Event{
		{Proc: "r1", Kind: Invoke, Op: 1, F: "acquire", Key: "k", Holder: "a", TTL: int64(time.Second)},
		{Proc: "r1", Kind: OK, Op: 1, F: "acquire", Key: "k", Token: 7, Created: true},
	}
	for _, e := range want {
		if err := w.Write(e); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].Token != 7 || got[0].T == 0 || got[1].T < got[0].T {
		t.Fatalf("got %+v, want the two events in order with times", got)
	}
	torn, err := Read(strings.NewReader(`{"t":1,"proc":"a","kind":"ok"}` + "\n" + `{"t":2,"pro`))
	if err != nil || len(torn) != 1 {
		t.Fatalf("torn last line: got %d events, err %v; want 1, nil", len(torn), err)
	}
	if _, err := Read(strings.NewReader("{bad\n{}\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("bad line: err %v, want one naming line 1", err)
	}
}

func TestMonoMatchesNow(t *testing.T) {
	a := Now()
	m := Mono(time.Now())
	b := Now()
	if m < a-int64(time.Millisecond) || m > b+int64(time.Millisecond) {
		t.Fatalf("Mono(time.Now()) = %d, outside [%d, %d] by more than 1ms", m, a, b)
	}
}
