package limitedlog

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// A memberlist line's kind leaves out its details (error, node, address,
// count), so that one flood is one kind however its packets differ.
func TestMemberlistKind(t *testing.T) {
	for _, tc := range []struct{ name, line, want string }{
		{"decrypt", "[ERR] memberlist: Decrypt packet failed: no installed keys could decrypt the message from=10.0.0.1:7946\n", "Decrypt packet failed"},
		{"quoted node", "[WARN] memberlist: Got ping for unexpected node 'x-1' from=10.0.0.1:7946\n", "Got ping for unexpected node"},
		{"unquoted node", "[WARN] memberlist: Got ping for unexpected node x-1 from=10.0.0.1:7946\n", "Got ping for unexpected node"},
		{"count", "[ERR] memberlist: UDP packet too short (3 bytes) from=10.0.0.1:7946\n", "UDP packet too short"},
		{"address only", "[DEBUG] memberlist: Stream connection from=10.0.0.1:7946\n", "Stream connection"},
		{"no tag", "memberlist: something happened\n", "something happened"},
		{"other prefix", "[ERR] Failed to shutdown transport: closed\n", "Failed to shutdown transport"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := memberlistKind([]byte(tc.line)); got != tc.want {
				t.Errorf("memberlistKind(%q) = %q, want %q", tc.line, got, tc.want)
			}
		})
	}
}

// A name from a stranger's gossip goes into a log line as one word: as it
// is when it looks like a name or an address, else quoted, so it cannot
// forge a line.
func TestWord(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"worker holder", "w1#0badc0de", "w1#0badc0de"},
		{"address", "[::1]:7946", "[::1]:7946"},
		{"empty", "", `""`},
		{"spaces", "a b", `"a b"`},
		{"newline", "x\n2026-01-01 [ERROR] forged", `"x\n2026-01-01 [ERROR] forged"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Word(tc.in); got != tc.want {
				t.Errorf("Word(%q) = %s, want %s", tc.in, got, tc.want)
			}
		})
	}
}

// The member a sender function names is added to memberlist's lines about
// refused gossip, and to no other line.
func TestMemberlistLoggerNamesTheSender(t *testing.T) {
	var out strings.Builder
	l := hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Info})
	sender := func(from string) (Member, bool) {
		return Member{Name: "w1#ab", Addr: "10.0.0.2:7946", Role: "worker"}, from == "10.0.0.2:51234"
	}
	log := MemberlistLogger(l, nil, sender)
	log.Printf("[ERR] memberlist: failed to receive: encryption is configured but remote state is not encrypted from=10.0.0.2:51234")
	log.Printf("[ERR] memberlist: failed to receive: no installed keys could decrypt the message from=10.0.0.9:40000")
	log.Printf("[WARN] memberlist: Got ping for unexpected node x from=10.0.0.2:51234")
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("got %d lines, want 3:\n%s", len(lines), out.String())
	}
	if want := "from=10.0.0.2:51234 member=w1#ab member_addr=10.0.0.2:7946 role=worker"; !strings.HasSuffix(lines[0], want) {
		t.Errorf("refused, sender known: %q, want it to end in %q", lines[0], want)
	}
	for _, line := range lines[1:] {
		if strings.Contains(line, "member=") {
			t.Errorf("%q names a member", line)
		}
	}
}
