package harness

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that records the failure of a helper under test
// instead of failing the test that runs it.
type recorder struct {
	testing.TB
	failure string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.failure = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Skip(args ...any) {
	r.failure = "skip: " + fmt.Sprint(args...)
	runtime.Goexit()
}

// run calls f with a recorder on a goroutine of its own, as the testing
// package runs a test, and returns what it failed with ("" if nothing).
func run(t *testing.T, f func(tb testing.TB)) string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
	return r.failure
}

func TestWaitForReturnsOnceConditionHolds(t *testing.T) {
	calls := 0
	failure := run(t, func(tb testing.TB) {
		WaitFor(tb, 5*time.Second, func() error {
			if calls++; calls < 3 {
				return fmt.Errorf("call %d", calls)
			}
			return nil
		})
	})
	if failure != "" || calls != 3 {
		t.Fatalf("got failure %q after %d calls, want none after 3", failure, calls)
	}
}

func TestWaitForReportsTheLastError(t *testing.T) {
	calls := 0
	failure := run(t, func(tb testing.TB) {
		WaitFor(tb, 30*time.Millisecond, func() error {
			calls++
			return fmt.Errorf("still %d", calls)
		})
	})
	if want := fmt.Sprintf("not true after 30ms: still %d", calls); failure != want {
		t.Fatalf("got failure %q, want %q", failure, want)
	}
}

func TestWaitUntilNamesWhatItWaitedFor(t *testing.T) {
	failure := run(t, func(tb testing.TB) {
		WaitUntil(tb, 20*time.Millisecond, "the moon", func() bool { return false })
	})
	if want := "timed out after 20ms waiting for the moon"; failure != want {
		t.Fatalf("got failure %q, want %q", failure, want)
	}
}

func TestPollerPausesItsInterval(t *testing.T) {
	calls := 0
	start := time.Now()
	Poller{Interval: 20 * time.Millisecond}.WaitUntil(t, 5*time.Second, "three calls", func() bool {
		calls++
		return calls == 3
	})
	if got := time.Since(start); got < 40*time.Millisecond {
		t.Fatalf("three calls took %v, want at least two pauses of 20ms", got)
	}
}

func TestHolds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		failAt  int // the call that returns an error; 0: none does
		wantErr string
	}{
		{"holds throughout", 0, ""},
		{"stops holding", 3, "broke at call 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			failure := run(t, func(tb testing.TB) {
				Holds(tb, 50*time.Millisecond, func() error {
					if calls++; calls == tc.failAt {
						return fmt.Errorf("broke at call %d", calls)
					}
					return nil
				})
			})
			if tc.wantErr == "" && failure != "" {
				t.Fatalf("got failure %q, want none", failure)
			}
			if tc.wantErr != "" && (!strings.HasPrefix(failure, "stopped holding after ") || !strings.HasSuffix(failure, tc.wantErr) || calls != tc.failAt) {
				t.Fatalf("got failure %q after %d calls, want it to end in %q after %d", failure, calls, tc.wantErr, tc.failAt)
			}
		})
	}
}

func TestContextEndsWithTheTest(t *testing.T) {
	var ctx interface{ Err() error }
	t.Run("inner", func(t *testing.T) {
		ctx = Context(t, time.Hour)
		if err := ctx.Err(); err != nil {
			t.Fatalf("got %v during the test, want nil", err)
		}
	})
	if ctx.Err() == nil {
		t.Fatal("context still live after its test ended")
	}
}
