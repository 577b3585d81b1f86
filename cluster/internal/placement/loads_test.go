package placement

import (
	"math"
	"testing"
	"time"
)

func TestLoadsDecayTowardTheReports(t *testing.T) {
	clk := newFakeClock()
	l := NewLoads(clk, 30*time.Second)
	total := 40.0
	l.Report("worker-1#ab12cd34", []KeyLoad{{"p/1", 100}}, &total)
	if got, ok := l.Key("p/1"); !ok || got != 100 {
		t.Fatalf("first report: Key = %v, %v; want 100, true", got, ok)
	}
	// A steady new level is half-way in after one half-life, whatever the
	// renewal interval: three reports 10 s apart, or one 30 s later.
	for range 3 {
		clk.Advance(10 * time.Second)
		l.Report("worker-1#ab12cd34", []KeyLoad{{"p/1", 200}}, nil)
	}
	if got, _ := l.Key("p/1"); math.Abs(got-150) > 1e-9 {
		t.Errorf("after one half-life at 200: Key = %v, want 150", got)
	}
	l2 := NewLoads(clk, 30*time.Second)
	l2.Report("h", []KeyLoad{{"p/1", 100}}, nil)
	clk.Advance(30 * time.Second)
	l2.Report("h", []KeyLoad{{"p/1", 200}}, nil)
	if got, _ := l2.Key("p/1"); math.Abs(got-150) > 1e-9 {
		t.Errorf("one report a half-life later: Key = %v, want 150", got)
	}
	// The total is the worker's: its id without the holder's suffix.
	if got, ok := l.Worker("worker-1"); !ok || got != 40 {
		t.Errorf("Worker(worker-1) = %v, %v; want 40, true", got, ok)
	}
	if _, ok := l.Worker("worker-2"); ok {
		t.Error("a worker that reported nothing has a load")
	}
}

func TestLoadsOfAKeySurviveItsMove(t *testing.T) {
	clk := newFakeClock()
	l := NewLoads(clk, 30*time.Second)
	l.Report("worker-1#aa", []KeyLoad{{"p/1", 100}}, nil)
	clk.Advance(30 * time.Second)
	l.Report("worker-2#bb", []KeyLoad{{"p/1", 200}}, nil)
	if got, _ := l.Key("p/1"); got != 150 {
		t.Errorf("after the key moved: Key = %v, want 150 (one average per key, whoever reports)", got)
	}
}

func TestLoadsForgetWhatIsNotReported(t *testing.T) {
	clk := newFakeClock()
	l := NewLoads(clk, time.Second)
	total := 1.0
	l.Report("w#1", []KeyLoad{{"old", 1}}, &total)
	clk.Advance(9 * time.Second)
	l.Report("v#1", []KeyLoad{{"new", 1}}, &total)
	clk.Advance(2 * time.Second)
	l.Sweep()
	if _, ok := l.Key("old"); ok {
		t.Error("a key not reported for 11 half-lives is still kept")
	}
	if _, ok := l.Worker("w"); ok {
		t.Error("a worker not reported for 11 half-lives is still kept")
	}
	if _, ok := l.Key("new"); !ok {
		t.Error("a key reported 2 half-lives ago was dropped")
	}
	if _, ok := l.Worker("v"); !ok {
		t.Error("a worker reported 2 half-lives ago was dropped")
	}
}
