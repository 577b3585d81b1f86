package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
)

// TestRemoveServerSafeguardsAndReadmission: with the real binary, an
// operator cannot take a live server out, nor leave fewer voters than
// -bootstrap-expect, without force; a forced removal says how to bring the
// server back; the server, started again with its data dir (not wiped), is
// readmitted as documented, catches up, becomes a voter again and its
// vote counts. Run plain with the CLI, and with mutual TLS and ACLs over
// the API (the operator right).
func TestRemoveServerSafeguardsAndReadmission(t *testing.T) {
	t.Run("plain, with the CLI", func(t *testing.T) {
		c := startCluster(t, 3)
		cli := func(args ...string) (string, error) {
			cmd := exec.Command(binary, args...)
			cmd.Env = append(cleanEnv(), client.EnvHTTPAddr+"="+strings.Join(c.httpAddrs(), ","))
			out, err := cmd.CombinedOutput()
			if err != nil {
				return string(out), fmt.Errorf("tenure %s: %v: %s", strings.Join(args, " "), err, out)
			}
			return string(out), nil
		}
		removeAndReadmit(t, c, cli)
	})
	t.Run("mutual TLS and ACLs, over the API", func(t *testing.T) {
		c, _ := startSecureCluster(t, 3, "operator")
		poll.WaitFor(t, startTimeout, func() error {
			r, err := c.try(c.nodes[0].httpAddr, http.MethodPost, "/v1/acl/bootstrap", nil)
			if err != nil || r.Status != http.StatusOK {
				return fmt.Errorf("acl bootstrap: %v %v", r, err)
			}
			var tok client.ACLToken
			if err := json.Unmarshal(r.Body, &tok); err != nil {
				return err
			}
			c.token = tok.SecretID
			return nil
		})
		c.leader(t)
		// Without a token, removing and readmitting are refused.
		l := c.leader(t)
		token := c.token
		c.token = ""
		for _, call := range [][2]string{{http.MethodDelete, "/v1/operator/servers/n1?force=true"}, {http.MethodPost, "/v1/operator/servers/n1/readmit"}} {
			if r := c.callOnce(t, l, call[0], call[1], nil); r.Status != http.StatusForbidden {
				t.Errorf("%s %s without a token: %v, want 403", call[0], call[1], r)
			}
		}
		c.token = token
		removeAndReadmit(t, c, nil)
	})
}

// removeAndReadmit runs the scenario on c, through the CLI when cli is not
// nil, else over the API.
func removeAndReadmit(t *testing.T, c *cluster, cli func(args ...string) (string, error)) {
	t.Helper()
	l := c.leader(t)
	v := c.followers(l)[0]
	id := c.nodes[v].id
	// third is the server that is neither a nor b (a may equal b).
	third := func(a, b int) int {
		for k := range 3 {
			if k != a && k != b {
				return k
			}
		}
		return -1
	}
	del := func(force bool) (reply, apiError) {
		path := "/v1/operator/servers/" + id
		if force {
			path += "?force=true"
		}
		r := c.call(t, third(l, v), http.MethodDelete, path, nil) // forwarded when l has not moved
		var e apiError
		if r.Status != http.StatusOK {
			r.decode(t, &e)
		}
		return r, e
	}

	// A live follower: refused, naming the rule.
	if r, e := del(false); r.Status != http.StatusConflict || e.Error != wire.CodeUnsafeRemoval || !strings.Contains(e.Message, "is alive") {
		t.Fatalf("remove live server %s without force: %v, want 409 unsafe_removal naming the rule that it is alive", id, r)
	}
	c.stop(t, v)
	// Stopped, but two voters would be fewer than -bootstrap-expect 3.
	poll.WaitFor(t, 10*time.Second, func() error {
		r, e := del(false)
		if r.Status != http.StatusConflict || e.Error != wire.CodeUnsafeRemoval || !strings.Contains(e.Message, "fewer than the 3") || strings.Contains(e.Message, "is alive") {
			return fmt.Errorf("remove stopped server %s without force: %v, want 409 unsafe_removal naming -bootstrap-expect only", id, r)
		}
		return nil
	})
	if got := len(c.mustStatus(t, c.leader(t)).Servers); got != 3 {
		t.Fatalf("refused removals changed the configuration: %d servers", got)
	}
	if cli != nil {
		out, err := cli("operator", "remove-server", "-force", id)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"Removed server " + id + " (2 voters left)", "Warning: forced past a rule", "tenure operator readmit-server " + id} {
			if !strings.Contains(out, want) {
				t.Errorf("tenure operator remove-server -force said %q, want %q", out, want)
			}
		}
	} else {
		r, _ := del(true)
		var res client.RemoveResult
		r.decode(t, &res)
		if r.Status != http.StatusOK || res.Voters != 2 || len(res.Forced) != 1 || !strings.Contains(res.Readmit, "/v1/operator/servers/"+id+"/readmit") {
			t.Fatalf("forced removal: %v, want 200 with 2 voters, the rule forced and how to readmit", r)
		}
	}
	l = c.leader(t)
	c.acquire(t, l, "readmit/while-removed", "worker", "30s", http.StatusCreated)

	// Started again with its data dir, it stays out until readmitted. (It
	// knows no leader meanwhile: c.leader, which asks every running node,
	// waits until it is back.)
	c.restart(t, v)
	poll.Holds(t, 3*time.Second, func() error {
		if _, ok := serverOf(c.mustStatus(t, l), id); ok {
			return fmt.Errorf("%s is back in the configuration before it was readmitted", id)
		}
		return nil
	})
	poll.WaitFor(t, joinTimeout, func() error {
		if cli != nil {
			out, err := cli("operator", "readmit-server", id)
			if err == nil && !strings.Contains(out, "is in the Raft configuration") {
				return fmt.Errorf("readmit-server said %q", out)
			}
			return err
		}
		r := c.call(t, third(l, v), http.MethodPost, "/v1/operator/servers/"+id+"/readmit", nil)
		if r.Status != http.StatusOK {
			return fmt.Errorf("readmit %s: %v", id, r)
		}
		return nil
	})
	poll.WaitFor(t, joinTimeout, func() error {
		srv, ok := serverOf(c.mustStatus(t, l), id)
		if !ok || srv.Suffrage != "voter" {
			return fmt.Errorf("%s is not a voter again: %+v", id, srv)
		}
		return nil
	})
	// It caught up: it has what was written while it was out.
	poll.WaitFor(t, 10*time.Second, func() error {
		if r := c.call(t, v, http.MethodGet, "/v1/leases/readmit/while-removed?stale=true", nil); r.Status != http.StatusOK {
			return fmt.Errorf("stale read on %s: %v", id, r)
		}
		return nil
	})
	// Its vote counts: with the third server stopped, the cluster commits.
	c.stop(t, third(c.leader(t), v))
	c.acquire(t, c.leader(t), "readmit/after", "worker", "30s", http.StatusCreated)
}

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
