package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestRunUsage(t *testing.T) {
	cases := []struct {
		args []string
		code int
		says string // in stderr
	}{
		{nil, exitUsage, "Usage: jagent <subcommand>"},
		{[]string{"version"}, exitUsage, `unknown subcommand "version"`},
		{[]string{"-h"}, exitOK, "Subcommands:"},
		{[]string{"store"}, exitUsage, "-listen is required"},
		{[]string{"store", "-listen", "nohost"}, exitUsage, "-listen:"},
		{[]string{"store", "-listen", "127.0.0.1:0"}, exitUsage, "-history is required"},
		{[]string{"store", "-bogus"}, exitUsage, "-bogus"},
		{[]string{"register", "-history", "h"}, exitUsage, "-servers: at least one server is required"},
		{[]string{"register", "-servers", "ftp://x:1", "-history", "h"}, exitUsage, "-servers:"},
		{[]string{"register", "-servers", "http://x:1", "-history", "h"}, exitUsage, "-name is required"},
		{[]string{"register", "-servers", "x:1", "-history", "h", "-name", "r", "-procs", "0"}, exitUsage, "-procs must be at least 1"},
		{[]string{"register", "-servers", "x:1", "-history", "h", "-name", "r", "-keys", " , "}, exitUsage, "-keys:"},
		{[]string{"register", "-servers", "x:1", "-history", "h", "-name", "r", "-ttl", "0s"}, exitUsage, "-ttl must be positive"},
		{[]string{"register", "-servers", "x:1", "-history", "h", "-name", "r", "-duration", "-1s"}, exitUsage, "-duration must not be negative"},
		{[]string{"register", "-servers", "x:1", "-history", "h", "-name", "r", "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"register", "-h"}, exitOK, "-procs"},
		{[]string{"mutex", "-servers", "x:1", "-history", "h"}, exitUsage, "-id is required"},
		{[]string{"mutex", "-servers", "x:1", "-history", "h", "-id", "w1"}, exitUsage, "-store is required"},
		{[]string{"mutex", "-servers", "x:1", "-history", "h", "-id", "w1", "-store", "a:1,b:2"}, exitUsage, "-store: want one"},
		{[]string{"mutex", "-servers", "x:1", "-history", "h", "-id", "w1", "-store", "a:1", "-work", "-1ms"}, exitUsage, "-work must not be negative"},
		{[]string{"mutex", "-servers", "x:1", "-history", "h", "-id", "w1", "-store", "a:1", "-stall-prob", "1.5"}, exitUsage, "-stall-prob must be within [0, 1]"},
		{[]string{"mutex", "-servers", "x:1", "-history", "h", "-id", "w1", "-store", "a:1", "-stall", "-1s"}, exitUsage, "-stall must not be negative"},
		{[]string{"elect", "-servers", "x:1", "-history", "h", "-id", "w1"}, exitUsage, "-election is required"},
		{[]string{"place", "-servers", "x:1", "-history", "h", "-id", "w1", "-group", "g"}, exitUsage, "-gossip-addr:"},
		{[]string{"place", "-servers", "x:1", "-history", "h", "-id", "w1", "-gossip-addr", "127.0.0.1:1"}, exitUsage, "-group is required"},
		{[]string{"place", "-servers", "x:1", "-history", "h", "-id", "w1", "-gossip-addr", "127.0.0.1:1", "-group", "g", "-join", "nope"}, exitUsage, "-join:"},
		{[]string{"place", "-servers", "x:1", "-history", "h", "-id", "w1", "-gossip-addr", "127.0.0.1:1", "-group", "g", "-log-level", "loud"}, exitUsage, "-log-level"},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		code := run(context.Background(), c.args, &stderr)
		if code != c.code || !strings.Contains(stderr.String(), c.says) {
			t.Errorf("jagent %s: exit %d, stderr:\n%s\nwant exit %d and %q", strings.Join(c.args, " "), code, stderr.String(), c.code, c.says)
		}
	}
}

func TestParseServers(t *testing.T) {
	got, err := parseServers(" http://10.201.7.1:7000/, 10.201.7.2:7000,https://h:1 ,")
	want := []string{"http://10.201.7.1:7000", "http://10.201.7.2:7000", "https://h:1"}
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("got %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"", "http://h:1/v1", "http://h:1?x=1", "ftp://h:1", "http://"} {
		if _, err := parseServers(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestBetweenIsSeeded(t *testing.T) {
	a, b := newRand(42, 1), newRand(42, 1)
	for range 100 {
		x, y := between(a, time.Second, 4*time.Second), between(b, time.Second, 4*time.Second)
		if x != y || x < time.Second || x > 4*time.Second {
			t.Fatalf("between: %v and %v from the same seed, want equal and within [1s, 4s]", x, y)
		}
	}
	if d := between(a, time.Second, time.Second); d != time.Second {
		t.Fatalf("between(1s, 1s) = %v", d)
	}
}
