package events

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/fsm"
)

// allocSink is a log output that keeps nothing.
type allocSink struct{ lines int }

func (s *allocSink) Write(p []byte) (int, error) { s.lines++; return len(p), nil }

// On a leader at INFO, acquisitions and releases (the hot path) cost the
// event logger no allocation: their types are not even read from the
// history. At DEBUG the same events are logged.
func TestLeaseEventLoggerSkipsLevelsOff(t *testing.T) {
	m := fsm.New()
	for i := uint64(1); i <= 100; i++ {
		key := "k"
		cmd := fsm.Encode(fsm.Acquire{Key: key, Holder: "h", TTL: 1e9})
		if i%2 == 0 {
			cmd = fsm.Encode(fsm.Release{Key: key, Holder: "h", Token: i / 2})
		}
		if _, err := m.ApplyLog(&raft.Log{Index: i, Term: 1, Type: raft.LogCommand, Data: cmd}); err != nil {
			t.Fatalf("apply %d: %v", i, err)
		}
	}
	sink := &allocSink{}
	l := &Logger{log: hclog.New(&hclog.LoggerOptions{Output: sink, Level: hclog.Info}), machine: m, leading: func() (uint64, bool) { return 1, true }}
	allocs := testing.AllocsPerRun(100, func() {
		if next := l.logAfter(0); next != 100 {
			t.Fatalf("logAfter(0) = %d, want 100", next)
		}
	})
	if allocs != 0 || sink.lines != 0 {
		t.Errorf("at INFO: %v allocations and %d lines per pass over acquisitions and releases, want none", allocs, sink.lines)
	}
	l.log.SetLevel(hclog.Debug)
	l.logAfter(0)
	if sink.lines != 100 {
		t.Errorf("at DEBUG: %d lines, want 100 (50 acquired, 50 released)", sink.lines)
	}
}

// Each lease event is logged by the leader at its level, and by a
// follower at TRACE, with key, holder, token, term and index.
func TestLeaseEventLevels(t *testing.T) {
	cases := []struct {
		typ    fsm.EventType
		leader hclog.Level
	}{
		{fsm.EventExpired, hclog.Info},
		{fsm.EventEnding, hclog.Info},
		{fsm.EventRevoked, hclog.Info},
		{fsm.EventHandedOff, hclog.Info},
		{fsm.EventMetadataChanged, hclog.Info},
		{fsm.EventAcquired, hclog.Debug},
		{fsm.EventReleased, hclog.Debug},
		{fsm.EventForgotten, hclog.Debug},
	}
	for _, tc := range cases {
		for _, leader := range []bool{true, false} {
			var out strings.Builder
			l := &Logger{log: hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Trace})}
			l.logEvent(&fsm.Event{Index: 9, Term: 3, Type: tc.typ, Key: "k", Holder: "h", Token: 4, Reason: "revoked"}, leader)
			want := hclog.Trace
			if leader {
				want = tc.leader
			}
			line := out.String()
			prefix := "[" + strings.ToUpper(want.String())
			if !strings.Contains(line, prefix) || !strings.Contains(line, "lease_"+tc.typ.String()+":") {
				t.Errorf("%s (leader %v): %q, want level %s and message lease_%s", tc.typ, leader, line, want, tc.typ)
			}
			for _, f := range []string{"key=k", "holder=h", "token=4", "term=3", "index=9", "reason=revoked"} {
				if !strings.Contains(line, f) {
					t.Errorf("%s (leader %v): %q lacks %s", tc.typ, leader, line, f)
				}
			}
		}
	}
}

// A leader logs the events of the entries of its own term only: those of
// an earlier term are its predecessor's to log, so a change of leader
// never logs an event twice.
func TestLeaderLogsOnlyItsOwnTerm(t *testing.T) {
	m := fsm.New()
	cmds := []struct {
		term uint64
		cmd  fsm.Command
	}{
		{1, fsm.Acquire{Key: "old", Holder: "h", TTL: 1e9}},
		{2, fsm.Acquire{Key: "new", Holder: "h", TTL: 1e9}},
	}
	for i, c := range cmds {
		if _, err := m.ApplyLog(&raft.Log{Index: uint64(i + 1), Term: c.term, Type: raft.LogCommand, Data: fsm.Encode(c.cmd)}); err != nil {
			t.Fatal(err)
		}
	}
	var out strings.Builder
	l := &Logger{log: hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Debug}), machine: m, leading: func() (uint64, bool) { return 2, true }}
	l.logAfter(0)
	if got := out.String(); strings.Contains(got, "key=old") || !strings.Contains(got, "key=new") || !strings.Contains(got, "term=2") {
		t.Errorf("the leader of term 2 logged %q; want the acquisition of new (term 2) only", got)
	}
}
