package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func TestEventsCommand(t *testing.T) {
	srv := answering(t, 200, map[string]any{"events": []any{
		map[string]any{"index": 12, "term": 2, "time": "2026-11-28T23:59:10.932052618Z", "type": "revoked", "key": "jobs/a", "holder": "h1", "token": 4, "by": "0b1f"},
		map[string]any{"index": 13, "term": 2, "type": "drained", "worker": "w1", "reason": "drained"},
	}, "index": 13})
	got := mustRunCLI(t, "events", "-http-addr", srv.URL, "-index", "11", "-prefix", "jobs/", "-type", "revoked, drained")
	req := srv.only(t)
	if req.Path != "/v1/events" || req.Query.Get("index") != "11" || req.Query.Get("prefix") != "jobs/" || req.Query.Get("type") != "revoked,drained" {
		t.Errorf("request %s ? %v", req.Path, req.Query)
	}
	// Each line carries the leader's time of the entry, "-" when it has none.
	want := "12 2026-11-28T23:59:10.932Z revoked key=jobs/a holder=h1 token=4 by=0b1f\n13 - drained worker=w1 reason=drained\n"
	if got.stdout != want {
		t.Errorf("output:\n%s\nwant:\n%s", got.stdout, want)
	}

	got = runCLI(t, "events", "-http-addr", srv.URL, "-json")
	var list struct {
		Events []map[string]any `json:"events"`
		Index  uint64           `json:"index"`
	}
	if err := json.Unmarshal([]byte(got.stdout), &list); err != nil || len(list.Events) != 2 || list.Index != 13 {
		t.Errorf("-json output %q: %v", got.stdout, err)
	}
}

// A full page of events (the server's most per answer) says how to read
// the next ones, since more may follow.
func TestEventsCommandSaysWhereToContinue(t *testing.T) {
	page := make([]any, eventsPage)
	for i := range page {
		page[i] = map[string]any{"index": 100 + i, "term": 2, "type": "acquired", "key": "k", "holder": "h", "token": i + 1}
	}
	srv := answering(t, 200, map[string]any{"events": page, "index": 100 + eventsPage - 1})
	got := runCLI(t, "events", "-http-addr", srv.URL)
	if got.code != exitOK || !strings.Contains(got.stderr, fmt.Sprintf("tenure events -index %d", 100+eventsPage-1)) {
		t.Errorf("exit %d, stderr %q; want where to continue", got.code, got.stderr)
	}
}

func TestEventsCommandErrors(t *testing.T) {
	got := runCLI(t, "events", "-type", "acquired,nope")
	if got.code != exitUsage || !strings.Contains(got.stderr, `"nope"`) {
		t.Errorf("bad -type: exit %d, stderr %q", got.code, got.stderr)
	}
	srv := answering(t, 410, map[string]any{"error": "compacted", "message": "gone", "oldest_index": 90})
	got = runCLI(t, "events", "-http-addr", srv.URL, "-index", "3", "-follow")
	if got.code != exitError || !strings.Contains(got.stderr, "-index 90") {
		t.Errorf("compacted: exit %d, stderr %q; want 1 and a hint to start from 90", got.code, got.stderr)
	}
}
