package redisfence

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/client"
)

func TestDoPassesTheFenceKeyFirstAndReadsTheReply(t *testing.T) {
	var gotKeys []string
	var gotArgs []any
	reply := any([]any{int64(1), "OK"})
	f := New(func(_ context.Context, script string, keys []string, args ...any) (any, error) {
		if script != Script {
			t.Fatalf("ran another script")
		}
		gotKeys, gotArgs = keys, args
		return reply, nil
	})
	ctx := context.Background()
	out, err := f.Do(ctx, "{s}:fence", 18446744073709551615, []string{"{s}"}, "SET", "v")
	if err != nil || out != "OK" {
		t.Fatalf("Do = %v %v", out, err)
	}
	if strings.Join(gotKeys, ",") != "{s}:fence,{s}" || gotArgs[0] != "18446744073709551615" || gotArgs[1] != "SET" || gotArgs[2] != "v" {
		t.Fatalf("keys %v args %v", gotKeys, gotArgs)
	}
	reply = []any{int64(0), []byte("20")}
	if _, err := f.Do(ctx, "{s}:fence", 19, []string{"{s}"}, "SET", "v"); !errors.Is(err, ErrStale) ||
		!errors.Is(err, client.ErrStaleToken) || !strings.Contains(err.Error(), "highest 20") {
		t.Fatalf("stale: %v", err)
	}
	reply = []any{1, "OK"} // an int, not an int64: not read as a refusal
	if _, err := f.Do(ctx, "{s}:fence", 19, nil, "SET"); err == nil || errors.Is(err, ErrStale) {
		t.Fatalf("a status of another type: %v, want an error that is not ErrStale", err)
	}
	reply = "surprise"
	if _, err := f.Do(ctx, "{s}:fence", 19, nil, "SET"); err == nil || errors.Is(err, ErrStale) {
		t.Fatalf("an unexpected reply: %v, want an error that is not ErrStale", err)
	}
	for _, tc := range []struct {
		key, cmd, field string
		token           uint64
	}{{"", "SET", "fence key", 1}, {"f", "SET", "token", 0}, {"f", "", "command", 1}} {
		if _, err := f.Do(ctx, tc.key, tc.token, nil, tc.cmd); !errors.Is(err, client.ErrInvalid) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("Do(%q, %d, %q) = %v, want ErrInvalid naming %s", tc.key, tc.token, tc.cmd, err, tc.field)
		}
	}
}

func TestAdvanceRunsTheScriptWithNothingToWrite(t *testing.T) {
	var got []any
	f := New(func(_ context.Context, _ string, keys []string, args ...any) (any, error) {
		got = append([]any{keys}, args...)
		return []any{int64(1), "PONG"}, nil
	})
	if err := f.Advance(context.Background(), "{s}:fence", 4); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || len(got[0].([]string)) != 1 || got[1] != "4" || got[2] != "PING" {
		t.Fatalf("Advance ran %v", got)
	}
}
