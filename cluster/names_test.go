package cluster

import (
	"errors"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/cluster/internal/check"
)

// Group names and worker ids follow the key rule without "/"; a worker
// gossip announces under another id is never planned keys (its leases
// would be held as "<id>#<suffix>" and could be taken for another's).
func TestNamesFollowTheKeyRuleWithoutSlash(t *testing.T) {
	for _, name := range []string{"a", "worker-1.eu:7", strings.Repeat("x", 256)} {
		if err := check.Name("name", name); err != nil {
			t.Errorf("%q: %v", name, err)
		}
	}
	for _, name := range []string{"", "a/b", "a#b", "a b", "a\x00", "é", strings.Repeat("x", 257)} {
		err := check.Name("worker", name)
		var inv *InvalidError
		if !errors.As(err, &inv) || inv.Field != "worker" {
			t.Errorf("%q: got %v, want an invalid worker error", name, err)
		}
	}
	members := []Member{
		{Meta: MemberMeta{Role: "worker", ID: "w1"}, Status: "alive"},
		{Meta: MemberMeta{Role: "worker", ID: "w/2"}, Status: "alive"},
		{Meta: MemberMeta{Role: "worker", ID: "w#3"}, Status: "alive"},
		{Meta: MemberMeta{Role: "server", ID: "s1"}, Status: "alive"},
	}
	live := liveWorkers(members)
	if len(live) != 1 || live[0].Meta.ID != "w1" {
		t.Errorf("live workers %v, want only w1", live)
	}
}
