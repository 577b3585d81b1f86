package jepsen

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tenure-io/tenure/test/harness/damage"
	"github.com/tenure-io/tenure/test/jepsen/check"
)

// resCorrupt names the check that every corrupt-follower fault ended with
// the server refusing its damaged log.
const resCorrupt = "nemesis: a follower with a damaged log refuses to serve"

// damageKeys are the workloads' keys, tried in order: flipping the lowest
// bit of a name's last byte gives another valid key of the same workload
// ("reg-0" becomes "reg-1"), the damage that diverges silently when it
// goes unnoticed.
var damageKeys = []string{"reg-0", "reg-1", "mx-0", "mx-1", "part-0", "part-1", "part-2", "part-3", "part-4", "part-5"}

func init() {
	addNemesis(nemesis{name: "corrupt-follower", minServers: 3, inject: corruptFollower})
}

// corruptFollower stops a follower, flips one byte inside a key name of a
// log entry in its raft.db, and starts it again: it must refuse to start,
// exit 78, and say which file, which entry and what to do. The undo does
// what the message says: the server removed from the configuration, its
// data dir moved aside, the server started again with the same flags on
// an empty one and readmitted, to resync from the leader.
func corruptFollower(ctx context.Context, w *world, rng *rand.Rand) (func() error, string, time.Duration, error) {
	_, rest := w.pickLeader(ctx, rng)
	f := rest[rng.IntN(len(rest))]
	if err := f.stop(10 * time.Second); err != nil {
		return nil, "", 0, err
	}
	var (
		index      uint64
		path, key  string
		damageErrs []string
	)
	for _, k := range damageKeys {
		i, p, err := damage.FlipInKey(f.dataDir, k)
		if err == nil {
			index, path, key = i, p, k
			break
		}
		damageErrs = append(damageErrs, err.Error())
	}
	if key == "" {
		return nil, "", 0, fmt.Errorf("%s: no entry to damage: %s", f.name, strings.Join(damageErrs, "; "))
	}
	desc := fmt.Sprintf("%s stopped, a byte of %q flipped in entry %d of %s, restarted: ", f.name, key, index, path)
	if err := w.restart(f); err != nil {
		return nil, "", 0, err
	}
	if err := refusedDamage(f, path, index, 30*time.Second); err != nil {
		desc += "NOT REFUSED: " + err.Error()
		w.log.Warn("server with a damaged log did not refuse it", "server", f.name, "error", err)
	} else {
		desc += "refused, exit status 78"
		w.corruptRefusals.Add(1)
	}
	undo := func() error {
		if err := f.stop(10 * time.Second); err != nil { // in case it did not refuse
			return err
		}
		return resync(ctx, w, f)
	}
	return undo, desc, between(rng, time.Second, 3*time.Second), nil
}

// refusedDamage waits up to d for server p to exit, and checks that it
// exited with status 78 (a refusal to start) and that its last start's output names the file,
// the entry and the remedy.
func refusedDamage(p *proc, path string, index uint64, d time.Duration) error {
	if err := p.wait(d); err != nil {
		return fmt.Errorf("still running: %w", err)
	}
	p.mu.Lock()
	code := p.cmd.ProcessState.ExitCode()
	p.mu.Unlock()
	if code != 78 {
		return fmt.Errorf("exit status %d, want 78", code)
	}
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return err
	}
	out := string(b)
	if i := strings.LastIndex(out, "==== start "); i >= 0 {
		out = out[i:]
	}
	for _, want := range []string{"the log is damaged", fmt.Sprintf("entry %d of %s", index, path),
		"remove-server -force " + p.name, "move the data dir " + p.dataDir + " aside", "readmit-server " + p.name} {
		if !strings.Contains(out, want) {
			return fmt.Errorf("its output does not say %q", want)
		}
	}
	return nil
}

// corruptResult checks that every corrupt-follower fault of the schedule
// ended in a refusal: a damaged log that a server accepts, or a nemesis
// that damaged nothing, fails the run.
func corruptResult(o *outcome, refused int64) []check.Result {
	return effectResult(o, "corrupt-follower", resCorrupt, refused,
		"%d of %d corrupt-follower faults ended in the server refusing its damaged log")
}

// resync is the remedy the damaged server's message gives: remove it from
// the configuration (forced: it leaves fewer voters than the cluster was
// bootstrapped with), move its data dir aside, start it on an empty one
// and readmit it, so that it never votes with a term it has forgotten.
func resync(ctx context.Context, w *world, f *proc) error {
	try := func(what string, d time.Duration, call func(ctx context.Context, s *proc) error) error {
		deadline := time.Now().Add(d)
		var last error
		for time.Now().Before(deadline) {
			for _, s := range w.servers {
				if s == f || !s.running() {
					continue
				}
				cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				last = call(cctx, s)
				cancel()
				if last == nil {
					return nil
				}
			}
			time.Sleep(200 * time.Millisecond)
		}
		return fmt.Errorf("%s %s: %w", what, f.name, last)
	}
	err := try("remove", 20*time.Second, func(ctx context.Context, s *proc) error {
		code, err := w.call(ctx, http.MethodDelete, w.url(s, "/v1/operator/servers/"+f.name+"?force=true"), nil, nil)
		if code == http.StatusNotFound {
			return nil // removed already (the leader's dead-server cleanup)
		}
		return err
	})
	if err != nil {
		return err
	}
	aside := fmt.Sprintf("%s.damaged-%d", f.dataDir, time.Now().UnixNano())
	if err := os.Rename(f.dataDir, aside); err != nil {
		// The data dir is a mount point (the disk nemeses' tmpfs), which
		// cannot be renamed: empty it instead.
		entries, rerr := os.ReadDir(f.dataDir)
		if rerr != nil {
			return fmt.Errorf("move %s aside: %w; read it: %w", f.dataDir, err, rerr)
		}
		for _, e := range entries {
			if err := os.RemoveAll(filepath.Join(f.dataDir, e.Name())); err != nil {
				return err
			}
		}
	}
	if err := w.restart(f); err != nil {
		return err
	}
	err = try("readmit", 30*time.Second, func(ctx context.Context, s *proc) error {
		_, err := w.call(ctx, http.MethodPost, w.url(s, "/v1/operator/servers/"+f.name+"/readmit"), nil, nil)
		return err
	})
	if err != nil {
		return err
	}
	// Readmitted, it is a non-voter until the leader promotes it: until
	// then the cluster has one voter fewer and no fault tolerance, so the
	// fault ends only when it votes again.
	return try("promote", 60*time.Second, func(ctx context.Context, s *proc) error {
		st, err := w.status(ctx, s)
		if err != nil {
			return err
		}
		for _, srv := range st.Servers {
			if srv.ID == f.name && srv.Suffrage == "voter" {
				return nil
			}
		}
		return fmt.Errorf("%s is not a voter yet", f.name)
	})
}
