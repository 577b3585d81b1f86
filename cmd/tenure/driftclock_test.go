package main

import (
	"path/filepath"
	"testing"
	"time"
)

// The fault suite's drifting lessor clock: its rate comes from a file, it
// runs at that rate, stays continuous and monotonic across rate changes,
// scales its timers, and refuses a bad rate without changing.
func TestDriftClock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rate")
	c := newDriftClock()
	if err := c.load(path); err != nil || c.rate != 1 {
		t.Fatalf("missing file: rate %v, err %v; want 1, nil", c.rate, err)
	}
	writeFile(t, path, "2\n")
	if err := c.load(path); err != nil || c.rate != 2 {
		t.Fatalf("rate file 2: rate %v, err %v", c.rate, err)
	}
	a, ra := c.Now(), time.Now()
	time.Sleep(100 * time.Millisecond)
	b, rb := c.Now(), time.Now()
	if got, real := b.Sub(a), rb.Sub(ra); got < 2*real-20*time.Millisecond || got > 2*real+20*time.Millisecond {
		t.Fatalf("at rate 2 the clock advanced %v while %v passed, want about %v", got, real, 2*real)
	}
	if got := c.real(100 * time.Millisecond); got != 50*time.Millisecond {
		t.Fatalf("a 100ms timer at rate 2 waits %v of real time, want 50ms", got)
	}
	before := c.Now()
	writeFile(t, path, "0.5")
	if err := c.load(path); err != nil {
		t.Fatal(err)
	}
	if after := c.Now(); after.Before(before) || after.Sub(before) > 20*time.Millisecond {
		t.Fatalf("a rate change moved the clock from %v to %v: want no jump", before, after)
	}
	for _, bad := range []string{"fast", "0", "-1", "11"} {
		writeFile(t, path, bad)
		if err := c.load(path); err == nil || c.rate != 0.5 {
			t.Fatalf("rate %q: err %v, rate %v; want an error and the rate unchanged", bad, err, c.rate)
		}
	}
}
