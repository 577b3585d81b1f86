package integration

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// processGone reports whether the process pid no longer runs: it does not
// exist, or it is a zombie waiting for a parent to reap it.
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return os.IsNotExist(err)
	}
	// The state follows the command name, which is in parentheses.
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] == 'Z'
	}
	return false
}

// readPID reads the pid that a command wrote to path.
func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("pid file %s: %v", path, err)
	}
	return pid
}

// waitLines waits until the file at path has n lines and returns them.
func waitLines(t *testing.T, path string, n int, timeout time.Duration) []string {
	t.Helper()
	var got []string
	poll.WaitFor(t, timeout, func() error {
		if got = lines(path); len(got) < n {
			return fmt.Errorf("%s has %d lines %q, want %d", filepath.Base(path), len(got), got, n)
		}
		return nil
	})
	return got
}

// touch creates the file at path.
func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestElectCommandFailover: two schedulers run under `tenure elect`; the
// command (a shell that records its start, then sleeps) runs only on the
// leader. SIGKILL to the leader's tenure process kills its command with it
// (Linux parent-death signal), and the other's command starts within TTL
// plus a bound: the dead leader's lease expires TTL after its last renewal
// and the standby, in line, is granted it in the same log entry. SIGTERM
// to the new leader's tenure is passed on to its command; tenure exits with
// the command's status and resigns at once.
func TestElectCommandFailover(t *testing.T) {
	c := startCluster(t, 3)
	dir := t.TempDir()
	const ttl = 2 * time.Second
	runs := filepath.Join(dir, "runs")
	script := `echo "$TENURE_HOLDER $TENURE_TOKEN" >> runs; echo $$ > "pid.$TENURE_HOLDER"; exec sleep 1000`
	start := func(holder string) *cli {
		return c.startCLI(t, dir, holder, "elect", "-ttl", ttl.String(), "-holder", holder, "scheduler", "--", "sh", "-c", script)
	}
	procs := map[string]*cli{"sched-a": start("sched-a")}
	first := waitLines(t, runs, 1, 15*time.Second)
	procs["sched-b"] = start("sched-b")
	c.waitForWaiters(t, 1)
	poll.Holds(t, time.Second, func() error {
		if got := lines(runs); len(got) != 1 {
			return fmt.Errorf("commands started: %q, want only the leader's", got)
		}
		return nil
	})
	leader, leaderToken, _ := strings.Cut(first[0], " ")
	if l := c.get(t, 0, "elections/scheduler"); l.State != "held" || l.Holder != leader || strconv.FormatUint(l.Token, 10) != leaderToken {
		t.Fatalf("the cluster says %+v, the command runs for %s with token %s", l, leader, leaderToken)
	}
	standby := "sched-a"
	if leader == "sched-a" {
		standby = "sched-b"
	}
	leaderCmd := readPID(t, filepath.Join(dir, "pid."+leader))

	killed := time.Now()
	procs[leader].cmd.Process.Kill()
	procs[leader].wait(t, 5*time.Second)
	got := waitLines(t, runs, 2, ttl+3*time.Second)
	took := time.Since(killed)
	t.Logf("%s's tenure killed; %s's command started %v later (TTL %v)", leader, standby, took.Round(time.Millisecond), ttl)
	holder, token, _ := strings.Cut(got[1], " ")
	if holder != standby {
		t.Errorf("the second command started for %s, want %s", holder, standby)
	}
	if a, _ := strconv.Atoi(leaderToken); mustAtoi(t, token) <= a {
		t.Errorf("the new leader's token %s is not above %s", token, leaderToken)
	}
	poll.WaitFor(t, 2*time.Second, func() error {
		if !processGone(leaderCmd) {
			return fmt.Errorf("the killed leader's command (pid %d) still runs", leaderCmd)
		}
		return nil
	})

	procs[standby].signal(t, syscall.SIGTERM)
	if code := procs[standby].wait(t, 5*time.Second); code != 128+int(syscall.SIGTERM) {
		t.Errorf("tenure elect exited %d after SIGTERM, want its command's status %d", code, 128+int(syscall.SIGTERM))
	}
	if l := c.get(t, 0, "elections/scheduler"); l.State != "free" || l.Reason != "released" {
		t.Errorf("after the leader stopped the key is %s (%s), want released at once", l.State, l.Reason)
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLockCommand: `tenure lock` end to end.
func TestLockCommand(t *testing.T) {
	c := startCluster(t, 3)

	t.Run("the command sees the lease and its status is tenure's", func(t *testing.T) {
		dir := t.TempDir()
		p := c.startCLI(t, dir, "batch", "lock", "-ttl", "2s", "-holder", "batch-1", "jobs/nightly", "--",
			"sh", "-c", `echo "$TENURE_KEY $TENURE_TOKEN $TENURE_HOLDER" > out; exit 3`)
		if code := p.wait(t, 10*time.Second); code != 3 {
			t.Errorf("exit status %d, want the command's 3", code)
		}
		l := c.get(t, 0, "jobs/nightly")
		want := fmt.Sprintf("jobs/nightly %d batch-1", l.Token)
		if got := lines(filepath.Join(dir, "out")); len(got) != 1 || got[0] != want {
			t.Errorf("the command saw %q, want %q", got, want)
		}
		if l.State != "free" || l.Reason != "released" {
			t.Errorf("after the command the key is %s (%s), want released", l.State, l.Reason)
		}
	})

	t.Run("a second lock waits and runs once the first command exits", func(t *testing.T) {
		dir := t.TempDir()
		order := filepath.Join(dir, "order")
		a := c.startCLI(t, dir, "a", "lock", "-ttl", "10s", "jobs/report", "--",
			"sh", "-c", `echo a-start >> order; while [ ! -e go-a ]; do sleep 0.02; done; echo a-end >> order`)
		waitLines(t, order, 1, 10*time.Second)
		b := c.startCLI(t, dir, "b", "lock", "-ttl", "10s", "jobs/report", "--", "sh", "-c", `echo b-start >> order`)
		c.waitForWaiters(t, 1)
		poll.Holds(t, time.Second, func() error {
			if got := lines(order); len(got) != 1 {
				return fmt.Errorf("order %q while a holds the lock", got)
			}
			return nil
		})
		released := time.Now()
		touch(t, filepath.Join(dir, "go-a"))
		if code := a.wait(t, 5*time.Second); code != 0 {
			t.Errorf("a exited %d", code)
		}
		if code := b.wait(t, 5*time.Second); code != 0 {
			t.Errorf("b exited %d", code)
		}
		// Well within the 10s TTL: a's lease was released, not left to expire.
		t.Logf("b ran and exited %v after a's command was told to finish", time.Since(released).Round(time.Millisecond))
		if got, want := lines(order), []string{"a-start", "a-end", "b-start"}; !slices.Equal(got, want) {
			t.Errorf("order %q, want %q", got, want)
		}
	})

	t.Run("-n 2 lets two run at once and a third waits for a slot", func(t *testing.T) {
		dir := t.TempDir()
		slots := filepath.Join(dir, "slots")
		start := func(holder string) *cli {
			return c.startCLI(t, dir, holder, "lock", "-n", "2", "-ttl", "10s", "-holder", holder, "jobs/encode", "--",
				"sh", "-c", `echo "$TENURE_HOLDER $TENURE_KEY" >> slots; while [ ! -e "go-$TENURE_HOLDER" ]; do sleep 0.02; done`)
		}
		procs := []*cli{start("enc-1")}
		waitLines(t, slots, 1, 10*time.Second)
		procs = append(procs, start("enc-2"))
		running := waitLines(t, slots, 2, 10*time.Second)
		procs = append(procs, start("enc-3"))
		c.waitForWaiters(t, 2) // in line on both slots
		poll.Holds(t, time.Second, func() error {
			if got := lines(slots); len(got) != 2 {
				return fmt.Errorf("running: %q, want two", got)
			}
			return nil
		})
		keys := map[string]string{}
		for _, l := range running {
			h, k, _ := strings.Cut(l, " ")
			keys[h] = k
		}
		if keys["enc-1"] == keys["enc-2"] || !strings.HasPrefix(keys["enc-1"], "jobs/encode/slot-") || !strings.HasPrefix(keys["enc-2"], "jobs/encode/slot-") {
			t.Fatalf("slots taken %v, want two different slots of jobs/encode", keys)
		}
		touch(t, filepath.Join(dir, "go-enc-1"))
		got := waitLines(t, slots, 3, 5*time.Second)
		if h, k, _ := strings.Cut(got[2], " "); h != "enc-3" || k != keys["enc-1"] {
			t.Errorf("third start %q, want enc-3 on the slot enc-1 freed (%s)", got[2], keys["enc-1"])
		}
		touch(t, filepath.Join(dir, "go-enc-2"))
		touch(t, filepath.Join(dir, "go-enc-3"))
		for _, p := range procs {
			if code := p.wait(t, 5*time.Second); code != 0 {
				t.Errorf("%s exited %d", p.name, code)
			}
		}
		held := 0
		for _, l := range c.list(t, 0).Leases {
			if strings.HasPrefix(l.Key, "jobs/encode/") && l.State == "held" {
				held++
			}
		}
		if held != 0 {
			t.Errorf("%d slots still held after every command exited, want none (one slot per holder, released)", held)
		}
	})

	t.Run("a lost lease stops the command and exits 75", func(t *testing.T) {
		dir := t.TempDir()
		p := c.startCLI(t, dir, "lost", "lock", "-ttl", "2s", "-holder", "lost-1", "jobs/lost", "--", "sleep", "1000")
		poll.WaitFor(t, 10*time.Second, func() error {
			r := c.call(t, 0, http.MethodGet, "/v1/leases/jobs/lost", nil)
			if r.Status != http.StatusOK {
				return fmt.Errorf("get: %v", r)
			}
			var l lease
			r.decode(t, &l)
			if l.State != "held" || l.Holder != "lost-1" {
				return fmt.Errorf("jobs/lost is %s by %q", l.State, l.Holder)
			}
			return nil
		})
		revoked := time.Now()
		if r := c.call(t, 0, http.MethodPost, "/v1/revoke/jobs/lost", nil); r.Status != http.StatusOK {
			t.Fatalf("revoke: %v", r)
		}
		if code := p.wait(t, 5*time.Second); code != 75 {
			t.Errorf("exit status %d, want 75 (lease lost)", code)
		}
		t.Logf("tenure lock stopped its command and exited %v after the revoke (renewal every %v)", time.Since(revoked).Round(time.Millisecond), (2 * time.Second / 3).Round(time.Millisecond))
	})
}
