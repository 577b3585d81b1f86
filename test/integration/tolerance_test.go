package integration

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestFailureToleranceFollowsAVoterKill: three voters may lose one
// (failure_tolerance 1, every server healthy). Within seconds of kill -9
// of a follower, the leader (by its Raft answers) and the other follower
// (by gossip) say in GET /v1/status that one more failure stops every
// write and that the killed server is not healthy; `tenure status` prints
// it and exits 1; tenure_failure_tolerance reads 0. Restarted, the server
// is healthy again and the tolerance back at 1.
func TestFailureToleranceFollowsAVoterKill(t *testing.T) {
	c := startCluster(t, 3)
	lead := c.leader(t)
	fs := c.followers(lead)
	killed, other := fs[0], fs[1]
	c.awaitTolerance(t, []int{lead, killed, other}, 1, "")
	if out, code := c.tenureCLI(t, "", "status", "-http-addr", c.nodes[lead].httpAddr); code != 0 || !strings.Contains(out, "Failure tolerance:") {
		t.Errorf("tenure status with every voter up: exit %d, output:\n%s", code, out)
	}

	c.kill(t, killed)
	took := c.awaitTolerance(t, []int{lead, other}, 0, c.nodes[killed].id)
	t.Logf("the leader and the other follower judged the failure tolerance 0 %v after the kill", took.Round(time.Millisecond))
	for _, i := range []int{lead, other} {
		out, code := c.tenureCLI(t, "", "status", "-http-addr", c.nodes[i].httpAddr)
		if code == 0 || !strings.Contains(out, "failure tolerance 0") || !strings.Contains(out, "not healthy: "+c.nodes[killed].id) {
			t.Errorf("tenure status against %s with a voter killed: exit %d, want non-zero, naming %s; output:\n%s", c.nodes[i].id, code, c.nodes[killed].id, out)
		}
		r, err := c.try(c.nodes[i].httpAddr, http.MethodGet, "/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := parseMetrics(r.Body)["tenure_failure_tolerance"]; !ok || got != 0 {
			t.Errorf("tenure_failure_tolerance on %s = %v (exposed %v), want 0", c.nodes[i].id, got, ok)
		}
	}

	c.restart(t, killed)
	c.awaitTolerance(t, []int{lead, killed, other}, 1, "")
}

// awaitTolerance waits until each of nodes answers GET /v1/status with
// failure_tolerance want, every server healthy but down (by id; "" for
// none), and returns how long that took.
func (c *cluster) awaitTolerance(t *testing.T, nodes []int, want int, down string) time.Duration {
	t.Helper()
	start := time.Now()
	poll.WaitFor(t, 30*time.Second, func() error {
		for _, i := range nodes {
			st, err := c.status(i)
			if err != nil {
				return err
			}
			var got []string
			for _, s := range st.Servers {
				if s.Healthy == (s.ID == down) {
					got = append(got, fmt.Sprintf("%s healthy=%v", s.ID, s.Healthy))
				}
			}
			if st.FailureTolerance != want || len(got) > 0 || len(st.Servers) != 3 {
				return fmt.Errorf("%s: failure tolerance %d, want %d; servers %+v; wrong: %v", c.nodes[i].id, st.FailureTolerance, want, st.Servers, got)
			}
		}
		return nil
	})
	return time.Since(start)
}
