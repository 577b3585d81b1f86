package integration

import (
	"fmt"
	"strings"
	"testing"
)

// With two of three servers killed, every command says what is wrong: the
// survivor has no leader and the others cannot be reached, not merely the
// refused connection of the last address tried; `tenure status` says there
// is no leader and exits non-zero (it exited 0 with "Role: candidate").
func TestTwoServersDownCommandsSayWhy(t *testing.T) {
	c, l := startLedCluster(t, 3)
	env := []string{"TENURE_HTTP_ADDR=" + strings.Join(c.httpAddrs(), ",")}
	mustRunTenure(t, env, "leases", "acquire", "-holder", "h", "-ttl", "5s", "k")
	survivor := c.followers(l)[0]
	poll.WaitFor(t, electionTimeout, func() error { // the survivor has applied it
		r, err := c.try(c.nodes[survivor].httpAddr, "GET", "/v1/leases/k?stale=true", nil)
		if err == nil && r.Status != 200 {
			err = fmt.Errorf("stale read of k on %s: %d", c.nodes[survivor].id, r.Status)
		}
		return err
	})
	for i := range c.nodes {
		if i != survivor {
			c.kill(t, i)
		}
	}
	// The survivor notices that the leader is gone within an election
	// timeout or two.
	poll.WaitFor(t, electionTimeout, func() error {
		st, err := c.status(survivor)
		if err == nil && st.LeaderID != "" {
			return fmt.Errorf("%s still follows %s", c.nodes[survivor].id, st.LeaderID)
		}
		return err
	})

	st := runTenure(t, nil, "status", "-http-addr", c.nodes[survivor].httpAddr)
	if st.code == 0 || !strings.Contains(st.stderr, "no leader") || !strings.Contains(st.stderr, c.nodes[survivor].id) {
		t.Errorf("tenure status on the survivor: exit %d, stderr %q; want non-zero and \"no leader\" naming %s", st.code, st.stderr, c.nodes[survivor].id)
	}

	// The page still loads there; that it shows a no-leader banner and the
	// leases as last known is checked in a browser (TestPage).
	page, err := c.try(c.nodes[survivor].httpAddr, "GET", "/ui", nil)
	if err != nil || page.Status != 200 || !strings.Contains(string(page.Body), `id="no-leader"`) {
		t.Errorf("GET /ui on the survivor: %v, want 200 and the page", err)
	}

	got := runTenure(t, env, "leases", "get", "k")
	if got.code == 0 {
		t.Fatalf("leases get with no leader exited 0: %s", got.stdout)
	}
	t.Logf("tenure status: %s", st.stderr)
	t.Logf("tenure leases get: %s", got.stderr)
	for _, want := range []string{c.nodes[survivor].httpAddr + " answered", "has no leader", "quorum", "refused"} {
		if !strings.Contains(got.stderr, want) {
			t.Errorf("leases get with no leader: stderr %q lacks %q", got.stderr, want)
		}
	}
	for i := range c.nodes {
		if i != survivor && !strings.Contains(got.stderr, c.nodes[i].httpAddr) {
			t.Errorf("leases get with no leader: stderr %q does not name the unreachable %s", got.stderr, c.nodes[i].httpAddr)
		}
	}
}
