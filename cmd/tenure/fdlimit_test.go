package main

import (
	"strings"
	"testing"

	"github.com/tenure-io/tenure/test/harness"
)

// The caps of the HTTP, Raft and gossip ports must fit in the limit of
// open files with room to spare: default HTTP caps are lowered to fit
// (with a warning), caps an operator set are refused, naming the flags and
// the limit.
func TestServerConnectionCapsFitOpenFileLimit(t *testing.T) {
	none := func(string) string { return "" }
	for _, tc := range []struct {
		name        string
		args        []string
		limit       uint64
		wantWarning string
		wantErr     string
	}{
		{"defaults within a large limit", nil, 1 << 20, "", ""},
		{"defaults lowered to fit", nil, 4096, "-http-max-conns lowered", ""},
		{"set caps past the limit", []string{"-http-max-conns", "8000"}, 4096, "", "-http-max-conns 8000"},
		{"raft and gossip caps alone past the limit", []string{"-raft-max-conns", "5000"}, 4096, "", "-raft-max-conns"},
		{"a tiny limit", nil, 512, "", "RLIMIT_NOFILE) is 512"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := loadServerSettings(append([]string{"-data-dir", "d"}, tc.args...), none)
			if err != nil {
				t.Fatal(err)
			}
			warning, err := fdBudget(s, tc.limit)
			if harness.WantError(t, "fdBudget", err, tc.wantErr) {
				return
			}
			if tc.wantWarning == "" && warning != "" || !strings.Contains(warning, tc.wantWarning) {
				t.Errorf("warning = %q, want %q", warning, tc.wantWarning)
			}
			if need := uint64(s.http.FileDescriptors() + s.cluster.Conns.FileDescriptors() + fdReserve); need > tc.limit {
				t.Errorf("caps need %d file descriptors, above the limit %d", need, tc.limit)
			}
			if err := s.http.Validate(); err != nil {
				t.Errorf("the caps after fitting: %v", err)
			}
		})
	}
	if _, err := loadServerSettings([]string{"-data-dir", "d", "-raft-max-conns", "10", "-raft-max-conns-per-client", "20"}, none); err == nil ||
		!strings.Contains(err.Error(), "raft-max-conns-per-client") {
		t.Errorf("raft per-client cap above the total: %v, want an error naming -raft-max-conns-per-client", err)
	}
}
