package check

import (
	"sort"

	"github.com/tenure-io/tenure/test/jepsen/history"
)

// Operations of unknown outcome (Info, or no completion) are not given to
// porcupine: as operations that may be linearized anywhere after their
// invoke, each would double the configurations it explores for the rest
// of the history. The model applies them instead, each at most once (the
// Fired bits of the state), and only where the operation being
// linearized needs them to explain its outcome:
//
//   - an acquire by holder h, when the operation shows h's lease (as
//     holder of a held or free key, or as the caller of a renew or a
//     same-holder acquire that succeeded) or may end it (h's release or
//     renew). Applied any earlier, the lease would either be seen or
//     ended by then, or be gone without a trace;
//   - a release, when the operation needs the key free or shows a holder
//     (whose indeterminate acquire may need it free);
//   - a renew, when the operation needs the lease to expire, and only if
//     it moves the expiry earlier (the holder shortened the TTL by
//     acquiring again); otherwise it can only delay expiry.
//
// Applying one later than it happened must not make the model stricter:
// the deadline of a lease it grants or renews is therefore counted from
// its invoke, the earliest point it can have taken effect.

// wants returns the holders whose lease c's outcome r shows (any: every
// holder) and whether the outcome needs the key free or the lease expired.
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

// closure returns s and every state reachable from it by operations of
// unknown outcome on c's key that c's outcome r may need (see above),
// each taking effect at most once and at a point not after c's
// completion.
//
// An operation that would change nothing is not applied: it can as well
// take effect later, so the state that omits it covers the one that
// includes it. Of interchangeable operations (same request) invoked by
// the current point, only one is applied, with its deadline counted from
// the earliest invoke among them: that state covers every choice.
func (m registerModel) closure(s lease, c call, r reply) []lease {
	infos := m.infos[c.Key]
	if len(infos) == 0 {
		return []lease{s}
	}
	holders, any, free := wants(c, r)
	if len(holders) == 0 && !free {
		return []lease{s}
	}
	allow := func(x call) bool {
		switch x.F {
		case "acquire":
			if any {
				return true
			}
			for _, h := range holders {
				if h == x.Holder {
					return true
				}
			}
		case "release":
			return true
		case "renew":
			return free
		}
		return false
	}
	out := []lease{s}
	var seen map[lease]bool
	for i := 0; i < len(out); i++ {
		u := out[i]
		for _, cand := range candidates(u, c, infos, allow) {
			for _, n := range m.fire(u, infos[cand.j], cand.from, c.Return) {
				n.Fired = fire(n.Fired, len(infos), cand.j)
				if seen == nil {
					seen = map[lease]bool{s: true}
				}
				if !seen[n] {
					seen[n] = true
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// candidate is an operation of unknown outcome that may take effect: the
// j-th of its key, with its deadline counted from from.
type candidate struct {
	j    int
	from int64
}

// candidates lists the pending operations allowed to take effect on u
// before c: one per class of interchangeable ones invoked by u.Now (the
// latest, counted from the earliest invoke), and each one invoked later.
func candidates(u lease, c call, infos []call, allow func(call) bool) []candidate {
	var out []candidate
	var classes map[call]int
	for j := len(infos) - 1; j >= 0; j-- {
		x := infos[j]
		if x.Call > c.Return || fired(u.Fired, j) || !allow(x) {
			continue
		}
		if x.Call > u.Now {
			out = append(out, candidate{j, x.Call})
			continue
		}
		class := call{F: x.F, Holder: x.Holder, Token: x.Token, TTL: x.TTL}
		if k, ok := classes[class]; ok {
			out[k].from = x.Call
			continue
		}
		if classes == nil {
			classes = map[call]int{}
		}
		classes[class] = len(out)
		out = append(out, candidate{j, x.Call})
	}
	return out
}

// fire returns the states in which x takes effect on u at a point not
// after limit, its deadline counted from from. Ways in which it would
// only delay expiry (a renew, or an acquire by the holder under the same
// TTL) are left out: they can never help explain a history.
func (m registerModel) fire(u lease, x call, from, limit int64) []lease {
	var out []lease
	add := func(n lease) {
		if n.Now = max(n.Now, x.Call); n.Now <= limit {
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
		switch {
		case !u.Held:
			add(granted(u))
		case u.Holder == x.Holder && u.TTL != x.TTL:
			u.TTL, u.Until = x.TTL, max(u.Until, from+m.minExpiry(x.TTL))
			add(u)
		}
		if e, ok := m.expire(u, limit); ok {
			add(granted(e))
		}
	case "renew":
		if n, ok := bind(u, x.Token); ok && u.Held && u.Holder == x.Holder {
			if until := from + m.minExpiry(n.TTL); until < n.Until {
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

// fired reports whether bit j of set is set.
func fired(set string, j int) bool {
	return j/8 < len(set) && set[j/8]&(1<<(j%8)) != 0
}

// fire returns set (of n bits) with bit j set.
func fire(set string, n, j int) string {
	b := []byte(set)
	if len(b) == 0 {
		b = make([]byte, (n+7)/8)
	}
	b[j/8] |= 1 << (j % 8)
	return string(b)
}

// infosByKey groups the operations of unknown outcome by key, each list
// ordered by invoke.
func infosByKey(infos []call) map[string][]call {
	out := map[string][]call{}
	for _, c := range infos {
		out[c.Key] = append(out[c.Key], c)
	}
	for _, l := range out {
		sort.SliceStable(l, func(i, j int) bool { return l[i].Call < l[j].Call })
	}
	return out
}
