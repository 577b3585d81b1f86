package limitedlog

import "testing"

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
