package integration

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestOperatorRecoverAfterLosingQuorum: two of three servers are lost for
// good; `tenure operator recover` on the stopped survivor makes it the
// only voter, it leads again with every lease and token it had, and two
// fresh servers join it and become voters. The next token is above every
// token handed out before.
func TestOperatorRecoverAfterLosingQuorum(t *testing.T) {
	c := newCluster(t)
	c.start(t, 3)
	l := c.leader(t)
	tokens := map[string]uint64{}
	for _, key := range []string{"jobs/a", "jobs/b"} {
		r := c.call(t, l, http.MethodPut, "/v1/leases/"+key, map[string]any{"holder": "h", "ttl": "5m"})
		if r.Status != http.StatusOK && r.Status != http.StatusCreated {
			t.Fatalf("acquire %s: %v", key, r)
		}
		var got lease
		r.decode(t, &got)
		tokens[key] = got.Token
	}
	s := c.followers(l)[0] // the survivor: it has every acknowledged write
	poll.WaitFor(t, 10*time.Second, func() error {
		r := c.callOnce(t, s, http.MethodGet, "/v1/leases/jobs/b?stale=true", nil)
		if r.Status != http.StatusOK {
			return fmt.Errorf("survivor's copy of jobs/b: %v", r)
		}
		return nil
	})
	for i := range c.nodes {
		if i != s {
			c.kill(t, i)
		}
	}
	c.kill(t, s)
	sv := c.nodes[s]

	// A wrong confirmation changes nothing.
	if r := runRecover(t, "wrong\n", "-data-dir", sv.dataDir, "-node-id", sv.id); r.code == 0 || !strings.Contains(r.stderr, "nothing changed") {
		t.Fatalf("recover with a wrong confirmation: exit %d, stderr %q", r.code, r.stderr)
	}
	r := runRecover(t, sv.id+"\n", "-data-dir", sv.dataDir, "-node-id", sv.id)
	if r.code != 0 || !strings.Contains(r.stdout, "only voter") || !strings.Contains(r.stdout, "2 held") {
		t.Fatalf("recover: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	c.restart(t, s)
	if got := c.leader(t); got != s {
		t.Fatalf("leader after the recovery is %s, want the survivor %s", c.nodes[got].id, sv.id)
	}
	for key, token := range tokens {
		var got lease
		r := c.call(t, s, http.MethodGet, "/v1/leases/"+key, nil)
		r.decode(t, &got)
		if r.Status != http.StatusOK || !got.Held() || got.Token != token {
			t.Errorf("%s after the recovery: %v; want held with token %d", key, r, token)
		}
	}

	// Two fresh servers join the survivor and become voters.
	var fresh []int
	for range 2 {
		fresh = append(fresh, c.addNode(t, "-join", sv.gossipAddr, "-bootstrap-expect", "3"))
	}
	poll.WaitFor(t, joinTimeout, func() error {
		st, err := c.status(s)
		if err != nil {
			return err
		}
		voters := 0
		for _, srv := range st.Servers {
			if srv.Suffrage == "voter" {
				voters++
			}
		}
		if voters != 3 {
			return fmt.Errorf("configuration %+v: want 3 voters", st.Servers)
		}
		return nil
	})
	r2 := c.call(t, s, http.MethodPut, "/v1/leases/jobs/c", map[string]any{"holder": "h", "ttl": "5m"})
	var next lease
	r2.decode(t, &next)
	if next.Token <= max(tokens["jobs/a"], tokens["jobs/b"]) {
		t.Fatalf("first token after the recovery %d, want above %v", next.Token, tokens)
	}
	for _, i := range fresh {
		poll.WaitFor(t, 10*time.Second, func() error {
			r := c.callOnce(t, i, http.MethodGet, "/v1/leases/jobs/c?stale=true", nil)
			if r.Status != http.StatusOK {
				return fmt.Errorf("fresh server %s: jobs/c %v", c.nodes[i].id, r)
			}
			return nil
		})
	}
}

// runRecover runs `tenure operator recover` with input on its stdin.
func runRecover(t *testing.T, input string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append([]string{"operator", "recover"}, args...)...)
	cmd.Env = cleanEnv()
	cmd.Stdin = strings.NewReader(input)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run tenure operator recover: %v", err)
	}
	return result{code, out.String(), errOut.String()}
}
