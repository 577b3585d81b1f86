package check

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tenure-io/tenure/test/jepsen/history"
)

// simLease is the simulated server's record of one key.
type simLease struct {
	held          bool
	holder        string
	token         uint64
	ttl, deadline int64
	reason        string
}

// simServer is a sequential lease server. With early > 0 it expires
// leases that much before their deadline: a broken server.
type simServer struct {
	leases map[string]*simLease
	last   uint64
	early  int64
}

// serve applies one request at time now and returns its completion.
func (s *simServer) serve(now int64, in history.Event) history.Event {
	l := s.leases[in.Key]
	if l != nil && l.held && now >= l.deadline-s.early {
		l.held, l.reason = false, "expired"
	}
	switch in.F {
	case "acquire":
		switch {
		case l != nil && l.held && l.holder == in.Holder:
			l.ttl, l.deadline = in.TTL, max(l.deadline, now+in.TTL)
			return kept(l.token)
		case l != nil && l.held:
			return heldBy(l.holder, l.token)
		}
		s.last++
		s.leases[in.Key] = &simLease{held: true, holder: in.Holder, token: s.last, ttl: in.TTL, deadline: now + in.TTL}
		return granted(s.last)
	case "renew":
		switch {
		case l == nil:
			return lost("unknown")
		case l.held && l.holder == in.Holder && l.token == in.Token:
			l.deadline = now + l.ttl
			return kept(l.token)
		case l.token == in.Token && l.holder == in.Holder:
			return lost(l.reason)
		}
		return lost("superseded")
	case "release":
		if l != nil && l.held && l.holder == in.Holder && l.token == in.Token {
			l.held, l.reason = false, "released"
		}
		return ok()
	}
	if l == nil {
		return shows("free", "", 0)
	}
	state := "free"
	if l.held {
		state = "held"
	}
	return shows(state, l.holder, l.token)
}

type simEvent struct {
	t   int64
	seq int
	fn  func()
}

type simQueue []simEvent

func (q simQueue) Len() int { return len(q) }
func (q simQueue) Less(i, j int) bool {
	return q[i].t < q[j].t || (q[i].t == q[j].t && q[i].seq < q[j].seq)
}
func (q simQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *simQueue) Push(x any)   { *q = append(*q, x.(simEvent)) }
func (q *simQueue) Pop() any     { o := *q; e := o[len(o)-1]; *q = o[:len(o)-1]; return e }

// sim describes a simulated run.
type sim struct {
	seed             uint64
	ops, procs, keys int
	early            time.Duration // the server expires leases this early
	lostPct, infoPct int           // requests lost before, replies lost after taking effect
	refusedPct       int
	ttlSpread        int // acquires ask 100ms ± up to this many 10ms steps
}

// simulate runs s.procs clients against a simulated server until s.ops
// operations were invoked, and returns the history. Requests and replies
// take up to 3ms each.
func simulate(s sim) []history.Event {
	rng := rand.New(rand.NewPCG(s.seed, s.seed))
	n, procs, keys := s.ops, s.procs, s.keys
	srv := &simServer{leases: map[string]*simLease{}, early: int64(s.early)}
	var q simQueue
	seq := 0
	schedule := func(t int64, fn func()) {
		seq++
		heap.Push(&q, simEvent{t, seq, fn})
	}
	var out []history.Event
	var ops int64
	lat := func() int64 { return rng.Int64N(int64(3 * time.Millisecond)) }
	ttl := int64(100 * time.Millisecond)
	var next func(p int, now int64)
	next = func(p int, now int64) {
		if ops >= int64(n) {
			return
		}
		ops++
		proc, holder := fmt.Sprintf("p%d", p), fmt.Sprintf("h%d", p%(procs-1))
		key := fmt.Sprintf("k%d", rng.IntN(keys))
		var in history.Event
		switch r := rng.IntN(20); {
		case r < 7:
			ttl := ttl
			if s.ttlSpread > 0 {
				ttl += int64(rng.IntN(2*s.ttlSpread+1)-s.ttlSpread) * int64(10*time.Millisecond)
			}
			in = history.Event{F: "acquire", Key: key, Holder: holder, TTL: ttl}
		case r < 12:
			in = history.Event{F: "renew", Key: key, Holder: holder, Token: tokenOf(srv, key, rng)}
		case r < 15:
			in = history.Event{F: "release", Key: key, Holder: holder, Token: tokenOf(srv, key, rng)}
		default:
			in = history.Event{F: "read", Key: key}
		}
		in.Kind, in.Proc, in.Op, in.T = history.Invoke, proc, ops, now
		out = append(out, in)
		done := func(at int64, e history.Event) {
			e.Proc, e.Op, e.T = proc, in.Op, at
			out = append(out, e)
			then := at + rng.Int64N(int64(20*time.Millisecond))
			schedule(then, func() { next(p, then) })
		}
		switch r := rng.IntN(100); {
		case r < s.refusedPct:
			done(now+lat(), fail("no_leader"))
		case r < s.refusedPct+s.lostPct: // never applied
			done(now+int64(50*time.Millisecond), info())
		default:
			applied := now + lat()
			schedule(applied, func() {
				reply := srv.serve(applied, in)
				if r < s.refusedPct+s.lostPct+s.infoPct {
					reply = info()
				}
				done(applied+lat(), reply)
			})
		}
	}
	for p := 0; p < procs; p++ {
		start := rng.Int64N(int64(10 * time.Millisecond))
		schedule(start, func() { next(p, start) })
	}
	for q.Len() > 0 {
		heap.Pop(&q).(simEvent).fn()
	}
	return out
}

// tokenOf picks the token a client would use: usually the current one,
// sometimes a stale or made-up one.
func tokenOf(s *simServer, key string, rng *rand.Rand) uint64 {
	if l := s.leases[key]; l != nil && rng.IntN(4) > 0 {
		return l.token
	}
	return uint64(rng.IntN(int(s.last) + 2))
}

// TestRegisterSimulatedServer checks histories of a correct server, with
// lost requests and replies, shared holders and varying TTLs: none may be
// flagged.
func TestRegisterSimulatedServer(t *testing.T) {
	for seed := uint64(1); seed <= 60; seed++ {
		s := sim{seed: seed, ops: 200 + int(seed%5)*100, procs: 2 + int(seed%7), keys: 1 + int(seed%3),
			lostPct: int(seed % 11), infoPct: int(seed % 7), refusedPct: 3, ttlSpread: int(seed%4) / 3}
		r := Register(simulate(s), RegisterConfig{Timeout: time.Minute})
		if !r.Valid || r.Unknown {
			t.Fatalf("%+v:\n%s", s, r)
		}
	}
}

// TestRegisterSimulatedBrokenServer checks histories of a server that
// expires leases 20ms (of 100ms) early: every one must be flagged.
func TestRegisterSimulatedBrokenServer(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		s := sim{seed: seed, ops: 600, procs: 3 + int(seed%3), keys: 2, early: 20 * time.Millisecond,
			lostPct: 4, infoPct: 4, refusedPct: 3}
		if r := Register(simulate(s), RegisterConfig{Timeout: time.Minute}); r.Valid {
			t.Fatalf("%+v: a server expiring early passed:\n%s", s, r)
		}
	}
}
