package transport

import (
	"errors"
	"testing"

	"github.com/hashicorp/raft"
)

// The cache forgets what a server said once the id is at another Raft
// address, and a reader that waits gets the answer of the question in
// flight.
func TestHTTPAddrsBoundToTheRaftAddress(t *testing.T) {
	asked := make(chan raft.ServerAddress, 4)
	h := NewHTTPAddrs(func(id raft.ServerID, addr raft.ServerAddress) (string, error) {
		asked <- addr
		if addr == "10.0.0.1:7501" {
			return "10.0.0.1:7500", nil
		}
		return "", errors.New("no answer")
	}, nil)
	ctx := t.Context()
	if got := h.Wait(ctx, "n1", "10.0.0.1:7501"); got != "10.0.0.1:7500" {
		t.Fatalf("wait: got %q, want 10.0.0.1:7500", got)
	}
	if got := h.Get("n1", "10.0.0.9:7501"); got != "" {
		t.Fatalf("at another Raft address: got %q, want nothing until it answers", got)
	}
	if got := h.Wait(ctx, "n1", "10.0.0.9:7501"); got != "" {
		t.Fatalf("at another Raft address that does not answer: got %q, want nothing", got)
	}
}
