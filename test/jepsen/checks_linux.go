package jepsen

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tenure-io/tenure/test/jepsen/check"
	"github.com/tenure-io/tenure/test/jepsen/history"
)

// Names of the results, stable: negative controls name the one they must
// trip.
const (
	resRegister   = "register: linearizable (porcupine)"
	resMutex      = "mutex: real-time mutual exclusion"
	resElection   = "election: one leader at a time"
	resPlaceHolds = "placement: one owner at a time"
	resFenced     = "fenced register: no lost or out-of-order write"
	resTokens     = "tokens: strictly increase per key"
	resTerms      = "servers: one leader per term"
	resDurability = "durability: acknowledged writes in every log"
	resPlacement  = "placement: every key owned once, by a live worker"
	resSnapshots  = "nemesis: a cut-off follower installs a snapshot"
)

// runChecks reads every history of the run and checks it. placement is
// the final placement check, made while the workers still ran.
func (w *world) runChecks(placement *check.Result) ([]check.Result, int, error) {
	byRole := map[string][]history.Event{}
	for _, p := range w.all() {
		if p.history == "" || p == w.adv.proc { // servers keep logs; the adversary's is judged by resAdversary
			continue
		}
		evs, err := history.ReadFile(p.history)
		if err != nil {
			return nil, 0, fmt.Errorf("history of %s: %w", p.name, err)
		}
		byRole[p.role] = append(byRole[p.role], evs...)
	}
	for _, evs := range byRole {
		sort.SliceStable(evs, func(i, j int) bool { return evs[i].T < evs[j].T })
	}
	ops := 0
	for role, evs := range byRole {
		if role != "store" {
			ops += len(evs)
		}
	}
	named := func(name string, r check.Result) check.Result { r.Name = name; return r }
	var out []check.Result
	minExpiry := func(ttl int64) int64 { return ttl }
	if w.usesDrift() {
		minExpiry = func(ttl int64) int64 { return int64(float64(ttl) / driftRate) }
	}
	if w.has("register") {
		out = append(out, named(resRegister, check.Register(byRole["register"], check.RegisterConfig{
			MinExpiry: minExpiry, HTMLPath: filepath.Join(w.cfg.Dir, "register.html"), Timeout: 2 * time.Minute})))
	}
	if w.has("mutex") {
		out = append(out, named(resMutex, check.Mutex(byRole["mutex"], check.MutexConfig{Name: "mutex"})))
		out = append(out, named(resFenced, check.Fenced(byRole["store"])))
	}
	if w.has("elect") {
		out = append(out, named(resElection, check.Mutex(byRole["elect"], check.MutexConfig{Name: "election"})))
	}
	if w.has("place") {
		holds := named(resPlaceHolds, check.Mutex(byRole["place"], check.MutexConfig{Name: "placement"}))
		n, warm := check.WarmHandOffs(byRole["place"])
		holds.Notes = append(holds.Notes, fmt.Sprintf("%d hand-overs between workers after a hand-back, %d of them warm (prepared by the new worker while the old one held the key)", n, warm))
		out = append(out, holds)
		if placement != nil {
			out = append(out, *placement)
		}
	}
	var all, sequential []history.Event
	for role, evs := range byRole {
		if role != "store" {
			all = append(all, evs...)
		}
		// Placement workers run their keys concurrently, so a process's
		// previous event does not bound when its next grant began.
		if role != "store" && role != "place" {
			sequential = append(sequential, evs...)
		}
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].T < all[j].T })
	sort.SliceStable(sequential, func(i, j int) bool { return sequential[i].T < sequential[j].T })
	out = append(out, named(resTokens, check.Tokens(sequential)))
	w.mu.Lock()
	samples := append([]check.StatusSample{}, w.samples...)
	w.mu.Unlock()
	out = append(out, named(resTerms, check.Terms(samples)))
	dirs := map[string]string{}
	for _, s := range w.servers {
		dirs[s.name] = s.dataDir
	}
	writes := ackedWrites(all)
	if w.has("place") {
		writes = append(writes, check.Write{Op: check.WriteGroup, Key: placeGroup, T: w.groupCreated})
	}
	out = append(out, named(resDurability, check.Durability(dirs, acks(all), writes)))
	return out, ops, nil
}

// ackedWrites are the other writes the cluster acknowledged to a worker:
// register releases answered 204 (the release's invoke names the lease),
// and the leases an operator's revoke said it ended. Releases by the
// holder workloads are left out: client.Lease.Release answers nil also
// when it sent nothing (a lease it no longer holds).
func ackedWrites(evs []history.Event) []check.Write {
	type opID struct {
		proc string
		op   int64
	}
	invokes := map[opID]history.Event{}
	var out []check.Write
	for _, e := range evs {
		switch {
		case e.Kind == history.Invoke && e.F == "release":
			invokes[opID{e.Proc, e.Op}] = e
		case e.Kind == history.OK && e.F == "release":
			if in, ok := invokes[opID{e.Proc, e.Op}]; ok && in.Token != 0 {
				out = append(out, check.Write{Op: check.WriteRelease, Key: in.Key, Holder: in.Holder, Token: in.Token, T: e.T})
			}
		case e.Kind == history.Revoked && e.Token != 0:
			out = append(out, check.Write{Op: check.WriteRevoke, Key: e.Key, Holder: e.Holder, Token: e.Token, T: e.T})
		}
	}
	return out
}

// acks are the acquisitions the cluster acknowledged to a worker: register
// acquires that succeeded, and every lease a holder was granted.
func acks(evs []history.Event) []check.Ack {
	var out []check.Ack
	for _, e := range evs {
		if (e.Kind == history.OK && e.F == "acquire") || e.Kind == history.Acquired {
			if e.Token != 0 {
				out = append(out, check.Ack{Key: e.Key, Holder: e.Holder, Token: e.Token, T: e.T})
			}
		}
	}
	return out
}

func (w *world) usesDrift() bool {
	for _, n := range w.cfg.Nemeses {
		if n == "clock-drift" {
			return true
		}
	}
	return false
}

// checkPlacement compares what every placement worker says it runs with
// the cluster's leases, once the group has settled (or the bound passed).
func (w *world) checkPlacement(ctx context.Context) check.Result {
	ctx, cancel := context.WithTimeout(ctx, 2*recoveryBound)
	defer cancel()
	var v groupView
	for {
		var err error
		if v, err = w.groupView(ctx); err == nil && v.settled() {
			break
		}
		if !sleep(ctx, 200*time.Millisecond) {
			break
		}
	}
	owners := map[string][]string{}
	var alive []string
	for _, a := range w.agents {
		if a.role != "place" || !a.running() {
			continue
		}
		alive = append(alive, a.name)
		var ks struct {
			Keys []string `json:"keys"`
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := w.call(cctx, "GET", fmt.Sprintf("http://%s:%d/keys", w.net.Addr(a.name), portStatus), nil, &ks)
		cancel()
		if err == nil {
			owners[a.name] = ks.Keys
		}
	}
	leases := map[string]string{}
	for _, k := range v.Keys {
		if k.State == "held" {
			leases[k.Key] = holderWorker(k.Holder)
		} else {
			leases[k.Key] = ""
		}
	}
	r := check.Placement(placeKeys(), owners, leases, alive)
	r.Name = resPlacement
	if len(v.Keys) == 0 {
		r.Notes = append(r.Notes, "group view unavailable: "+strings.Join(alive, ","))
	}
	return r
}
