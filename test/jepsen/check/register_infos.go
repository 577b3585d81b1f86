package check

import (
	"sort"

	"github.com/tenure-io/tenure/test/jepsen/history"
)

// Operations of unknown outcome (Info, or no completion) are not given to
// porcupine: as operations that may be linearized anywhere after their
// invoke, each would double the configurations it explores for the rest
// of the history. The model applies them instead, each at most once, and
// only where the operation being linearized needs one to explain its
// outcome:
//
//   - an acquire by holder h, when the operation shows h's lease (as
//     holder of a held or free key, or as the caller of a renew or a
//     same-holder acquire that succeeded) or may end it (h's release or
//     renew). Applied any earlier, the lease would either be seen or
//     ended by then, or be gone without a trace;
//   - a release, when the operation needs the key free, or before an
//     acquire as above;
//   - a renew, when the operation needs the lease to expire, and only if
//     it moves the expiry earlier, which needs acquires of the key under
//     different TTLs; otherwise it can only delay expiry. For the same
//     reason an acquire by the current holder is never applied: a
//     shorter TTL it may have set is taken into account by every renew
//     (registerModel.renewTTL).
//
// Applying one later than it happened must not make the model stricter:
// the deadline of a lease it grants or renews is therefore counted from
// the earliest invoke of its class.
//
// Identical requests (same function, holder, token and TTL) form a class;
// the state counts how many of each class took effect. Which ones did
// does not matter: any of them may take effect at a point once enough of
// them were invoked by then.

// class is a set of identical requests of unknown outcome.
type class struct {
	call          // the request; Call is unused
	calls []int64 // their invokes, sorted
}

// pending indexes the requests of unknown outcome of one key.
type pending struct {
	classes []class // a class's index is its counter in lease.Fired
	// by lists the class indexes of each function and holder.
	by map[string]map[string][]int
	// fixedTTL: every acquire of the key asks the same TTL, so a renew or
	// a same-holder acquire can never make a lease expire earlier.
	fixedTTL bool
}

// indexInfos groups the operations of unknown outcome by key and class;
// known are the operations of known outcome, for the TTLs they ask.
func indexInfos(known []pairedCall, infos []call) map[string]*pending {
	out := map[string]*pending{}
	at := map[call]int{}
	for _, c := range infos {
		p := out[c.Key]
		if p == nil {
			p = &pending{by: map[string]map[string][]int{}, fixedTTL: true}
			out[c.Key] = p
		}
		id := call{Key: c.Key, F: c.F, Holder: c.Holder, Token: c.Token, TTL: c.TTL}
		i, ok := at[id]
		if !ok {
			i = len(p.classes)
			at[id] = i
			p.classes = append(p.classes, class{call: id})
			if p.by[c.F] == nil {
				p.by[c.F] = map[string][]int{}
			}
			p.by[c.F][c.Holder] = append(p.by[c.F][c.Holder], i)
		}
		p.classes[i].calls = append(p.classes[i].calls, c.Call)
	}
	ttls := map[string]int64{}
	for _, c := range append(calls(known), infos...) {
		if t, ok := ttls[c.Key]; ok && c.F == "acquire" && t != c.TTL && out[c.Key] != nil {
			out[c.Key].fixedTTL = false
		}
		if c.F == "acquire" {
			ttls[c.Key] = c.TTL
		}
	}
	for _, p := range out {
		for _, cl := range p.classes {
			sort.Slice(cl.calls, func(i, j int) bool { return cl.calls[i] < cl.calls[j] })
		}
	}
	return out
}

// wants returns the holders whose lease c's outcome r shows or may end
// (any: every holder) and whether the outcome needs the key free or the
// lease expired.
func wants(c call, r reply) (holders []string, any, free bool) {
	switch {
	case c.F == "acquire" && r.Kind == history.Fail: // held
		return []string{r.Holder}, r.Holder == "", false
	case c.F == "acquire" && r.Created:
		return nil, false, true
	case c.F == "acquire", c.F == "release", c.F == "renew" && r.Kind == history.OK:
		return []string{c.Holder}, false, false
	case c.F == "renew": // lease_lost
		return []string{c.Holder}, false, true
	case c.F == "read" && r.State == "held":
		return []string{r.Holder}, false, false
	case c.F == "read" && r.Holder != "":
		return []string{r.Holder}, false, true
	}
	return nil, false, false
}

// closure returns the states from which c is applied: s, and the states
// reachable from it by requests of unknown outcome on c's key that c's
// outcome r may need (see above), at points not after c's completion.
// When r needs no free key, only states held by a holder it names are
// kept besides s: any other effect can as well come later.
func (m registerModel) closure(s lease, c call, r reply) []lease {
	p := m.infos[c.Key]
	if p == nil {
		return []lease{s}
	}
	holders, any, free := wants(c, r)
	if len(holders) == 0 && !free {
		return []lease{s}
	}
	if any {
		holders = holders[:0]
		for h := range p.by["acquire"] {
			holders = append(holders, h)
		}
		sort.Strings(holders)
	}
	// At most one acquire is applied: a second would replace the lease
	// of the first, whose token c cannot reveal any more, so the first
	// would only have added constraints.
	type item struct {
		lease
		acquired bool
	}
	all := []item{{lease: s}}
	seen := map[lease]bool{s: true}
	for i := 0; i < len(all); i++ {
		u := all[i]
		var cands []int
		if !u.acquired {
			for _, h := range holders {
				cands = append(cands, p.by["acquire"][h]...)
			}
		}
		if u.Held {
			cands = append(cands, p.by["release"][u.Holder]...)
			if free && !p.fixedTTL {
				cands = append(cands, p.by["renew"][u.Holder]...)
			}
		}
		for _, i := range cands {
			acquired := u.acquired || p.classes[i].F == "acquire"
			for _, n := range m.fire(u.lease, p, i, c.Return) {
				if !seen[n] {
					seen[n] = true
					all = append(all, item{n, acquired})
				}
			}
		}
	}
	out := []lease{s}
	for _, u := range all[1:] {
		if free {
			out = append(out, u.lease)
			continue
		}
		for _, h := range holders {
			if u.Held && u.Holder == h {
				out = append(out, u.lease)
				break
			}
		}
	}
	return out
}

// fire returns the states in which one more request of class i takes
// effect on u at a point not after limit. An acquire by the holder of u
// only restarts its deadline, which can never help explain a history; a
// shorter TTL it may set is accounted for where a renew uses it (see
// renewTTL). A renew only counts if it moves the expiry earlier.
func (m registerModel) fire(u lease, p *pending, i int, limit int64) []lease {
	cl := p.classes[i]
	k := count(u.Fired, i)
	if k >= len(cl.calls) {
		return nil
	}
	x := cl.call
	x.Call = cl.calls[k] // the earliest point at which k+1 were invoked
	from := cl.calls[0]
	var out []lease
	add := func(n lease) {
		if n.Now = max(n.Now, x.Call); n.Now <= limit {
			n.Fired = bump(n.Fired, len(p.classes), i)
			out = append(out, n)
		}
	}
	granted := func(s lease) lease {
		n := m.grant(s, x, 0)
		n.Until = from + m.minExpiry(x.TTL)
		return n
	}
	switch x.F {
	case "acquire":
		if !u.Held {
			add(granted(u))
		}
		if e, ok := m.expire(u, limit); ok {
			add(granted(e))
		}
	case "renew":
		if n, ok := bind(u, x.Token); ok && u.Held && u.Holder == x.Holder {
			if until := from + m.minExpiry(m.renewTTL(n, x.Key, limit)); until < n.Until {
				n.Until = until
				add(n)
			}
		}
	case "release":
		if n, ok := released(u, x); ok {
			add(n)
		}
	}
	return out
}

// count returns how many requests of class i took effect, per the
// counters in fired (two bytes each).
func count(fired string, i int) int {
	if 2*i+1 >= len(fired) {
		return 0
	}
	return int(fired[2*i]) | int(fired[2*i+1])<<8
}

// bump returns fired (n counters) with counter i incremented.
func bump(fired string, n, i int) string {
	b := []byte(fired)
	if len(b) == 0 {
		b = make([]byte, 2*n)
	}
	v := count(fired, i) + 1
	b[2*i], b[2*i+1] = byte(v), byte(v>>8)
	return string(b)
}

// calls returns the inputs of known.
func calls(known []pairedCall) []call {
	out := make([]call, len(known))
	for i, c := range known {
		out[i] = c.in
	}
	return out
}
