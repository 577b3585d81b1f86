package check

import (
	"hash/fnv"

	"github.com/tenure-io/tenure/test/jepsen/history"
)

// call is the input of one register operation.
type call struct {
	Proc   string
	Op     int64
	Key    string
	F      string // acquire, renew, release, read
	Holder string
	Token  uint64 // renew, release
	TTL    int64  // acquire, nanoseconds
	Call   int64  // invoke T
	Return int64  // completion T; math.MaxInt64 for an unknown outcome
}

// reply is the output of one register operation.
type reply struct {
	Kind    string // history.OK or Fail (Info operations live in the model)
	Err     string
	State   string // reads: held or free; renew lease_lost: the reason
	Holder  string
	Token   uint64
	Created bool
}

// lease is the model's state of one key. It is a comparable value, so
// states are equal when ==.
//
// Token 0 with a Holder means that the lease was granted by an acquire of
// unknown outcome and nothing has revealed its token yet; it is known to
// exceed Floor, and the first observation binds it.
type lease struct {
	Held   bool
	Holder string // the holder, or the last holder of a free key ("" = never held)
	Token  uint64 // its token, 0 = not yet known
	// Floor is the highest token known to have been granted on the key.
	// A known current token equals it; a new grant must exceed it.
	Floor uint64
	TTL   int64 // of the current lease, as its last acquire asked
	// Until is the earliest time the current lease may expire.
	Until int64
	// Now is the earliest time the linearization can be at: points are
	// non-decreasing, an operation's point is at or after its invoke, and
	// an expiry is at or after Until.
	Now int64
	// Fired counts, per class of identical requests of unknown outcome,
	// how many took effect (see register_infos.go); "" for none.
	Fired string
}

// registerModel is the sequential specification of one key.
type registerModel struct {
	minExpiry func(ttl int64) int64
	clock     clock
	// infos are the operations of unknown outcome of each key.
	infos map[string]*pending
}

// step returns every state the key can be in after c returned r from s,
// letting pending operations of unknown outcome take effect first; none
// when the outcome is impossible.
//
// Two kinds of states are left out because another state covers them
// (whatever the one can do next, the other can too):
//
//   - a lease granted by an indeterminate acquire just applied whose
//     token c did not reveal: c did not need it, and the acquire may as
//     well take effect at the next operation that does;
//   - a state whose lease equals another's but which has applied more
//     of the indeterminate requests.
func (m registerModel) step(s lease, c call, r reply) []lease {
	var out []lease
	blind := r.Kind == history.Fail && r.Err == "held" && r.Token == 0
	for _, pre := range m.closure(s, c, r) {
		for _, n := range m.apply(pre, c, r) {
			if unknownToken(n) && !unknownToken(s) && !blind {
				continue
			}
			out = append(out, n)
		}
	}
	return minimal(out)
}

// unknownToken reports whether s's current or last lease has a token
// nothing revealed yet.
func unknownToken(s lease) bool { return s.Holder != "" && s.Token == 0 }

// minimal drops every state that equals another but for having applied
// more of the indeterminate requests (and duplicates).
func minimal(states []lease) []lease {
	if len(states) < 2 {
		return states
	}
	out := states[:0:0]
	for i, a := range states {
		covered := false
		for j, b := range states {
			if i == j {
				continue
			}
			x, y := a, b
			x.Fired, y.Fired = "", ""
			if x == y && subset(b.Fired, a.Fired) && (b.Fired != a.Fired || j < i) {
				covered = true
				break
			}
		}
		if !covered {
			out = append(out, a)
		}
	}
	return out
}

// subset reports whether every counter of a is at most b's.
func subset(a, b string) bool {
	for i := 0; 2*i+1 < len(a); i++ {
		if count(a, i) > count(b, i) {
			return false
		}
	}
	return true
}

// point moves s to the earliest point of c.
func point(s lease, c call) lease {
	s.Now = max(s.Now, c.Call)
	return s
}

// grant is the state after a new grant to c's holder under token (0:
// unknown). The leader starts the deadline when it applies the grant, at
// or after the grant's point.
func (m registerModel) grant(s lease, c call, token uint64) lease {
	s = point(s, c)
	floor := s.Floor
	if token != 0 {
		floor = token
	}
	return lease{Held: true, Holder: c.Holder, Token: token, Floor: floor, TTL: c.TTL,
		Until: s.Now + m.minExpiry(c.TTL), Now: s.Now, Fired: s.Fired}
}

// keep is the state after an acquire by the holder: the leader restarts
// the deadline but never moves it earlier.
func (m registerModel) keep(s lease, c call) lease {
	s = point(s, c)
	s.TTL, s.Until = c.TTL, max(s.Until, s.Now+m.minExpiry(c.TTL))
	return s
}

// renewed is the state after a successful renew by c, if s allows one:
// the deadline restarts under the lease's TTL, or under a shorter one that
// an indeterminate acquire by the holder may have set.
func (m registerModel) renewed(s lease, c call) (lease, bool) {
	if !s.Held || s.Holder != c.Holder {
		return s, false
	}
	s, ok := bind(s, c.Token)
	if !ok {
		return s, false
	}
	s = point(s, c)
	s.Until = s.Now + m.minExpiry(m.renewTTL(s, c.Key, c.Return))
	return s, true
}

// renewTTL is the shortest TTL under which a renew of the lease s of key
// may restart its deadline by time by: the lease's, or that of an acquire
// of unknown outcome by its holder invoked by then (the leader renews
// under the TTL of the holder's last acquire).
func (m registerModel) renewTTL(s lease, key string, by int64) int64 {
	ttl := s.TTL
	if p := m.infos[key]; p != nil && !p.fixedTTL {
		for _, i := range p.by["acquire"][s.Holder] {
			if cl := p.classes[i]; cl.calls[0] <= by {
				ttl = min(ttl, cl.TTL)
			}
		}
	}
	return ttl
}

// released is the state after c's release freed the key, if it does.
func released(s lease, c call) (lease, bool) {
	if !s.Held || s.Holder != c.Holder {
		return s, false
	}
	s, ok := bind(s, c.Token)
	s.Held = false
	return s, ok
}

// expire frees a held s at the earliest point allowed, if that point is
// not after limit.
func (m registerModel) expire(s lease, limit int64) (lease, bool) {
	if !s.Held {
		return s, false
	}
	s.Held = false
	s.Now = max(s.Now, s.Until)
	return s, s.Now <= limit
}

// bind reveals the token of the current (or last) lease of s as t.
func bind(s lease, t uint64) (lease, bool) {
	switch {
	case s.Holder == "":
		return s, false
	case s.Token == t:
		return s, true
	case s.Token == 0 && t > s.Floor:
		s.Token, s.Floor = t, t
		return s, true
	}
	return s, false
}

// hashLease hashes every field of a lease (Equal is ==).
func hashLease(s lease) uint64 {
	h := fnv.New64a()
	var b [8 * 5]byte
	for i, v := range []uint64{s.Token, s.Floor, uint64(s.TTL), uint64(s.Until), uint64(s.Now)} {
		for j := 0; j < 8; j++ {
			b[i*8+j] = byte(v >> (8 * j))
		}
	}
	h.Write(b[:])
	h.Write([]byte(s.Holder))
	h.Write([]byte(s.Fired))
	if s.Held {
		h.Write([]byte{1})
	}
	return h.Sum64()
}

// observes reports whether a Fail with err reveals the key's state (as
// opposed to a refusal that changed nothing and says nothing).
func observes(f, err string) bool {
	return (f == "acquire" && err == "held") || (f == "renew" && err == "lease_lost")
}
