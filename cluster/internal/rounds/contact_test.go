package rounds

import (
	"testing"

	"github.com/hashicorp/raft"
)

// Contacts are per address: an answer at one address says nothing about
// another.
func TestContactsPerAddress(t *testing.T) {
	c := NewContacts()
	c.answered("n2", "10.0.0.2:7501", 42, true)
	if ct, ok := c.Get("n2", "10.0.0.2:7501"); !ok || ct.LastLog != 42 {
		t.Errorf("get at the answering address: %+v %v, want last log 42", ct, ok)
	}
	if _, ok := c.Get("n2", "10.0.0.9:7501"); ok {
		t.Errorf("get at another address: found, want none")
	}
	c.answered("n2", "10.0.0.2:7501", 0, false) // a snapshot install keeps the index
	if ct, _ := c.Get("n2", "10.0.0.2:7501"); ct.LastLog != 42 {
		t.Errorf("after an answer without index: last log %d, want 42", ct.LastLog)
	}
	if _, ok := c.Get(raft.ServerID("n3"), "10.0.0.3:7501"); ok {
		t.Errorf("get of a server never heard: found, want none")
	}
}
