package check

import (
	"fmt"
	"strconv"

	"github.com/tenure-io/tenure/test/jepsen/history"
)

// apply returns the states after c, whose outcome r is known (OK, or a
// Fail that reveals the state), from s; none when r is impossible.
func (m registerModel) apply(s lease, c call, r reply) []lease {
	var out []lease
	add := func(n lease, ok bool) {
		if !ok {
			return
		}
		if n = point(n, c); n.Now <= c.Return {
			out = append(out, n)
		}
	}
	switch c.F {
	case "acquire":
		switch {
		case r.Kind == history.Fail: // held
			if s.Held && s.Holder != c.Holder && (r.Holder == "" || r.Holder == s.Holder) {
				if r.Token == 0 {
					add(s, true)
				} else {
					add(bind(s, r.Token))
				}
			}
		case r.Created:
			if !s.Held && r.Token > s.Floor {
				add(m.grant(s, c, r.Token), true)
			}
			if e, ok := m.expire(s, c.Return); ok && r.Token > e.Floor {
				add(m.grant(e, c, r.Token), true)
			}
		default: // kept: same holder, same token, deadline restarted
			if s.Held && s.Holder == c.Holder {
				if n, ok := bind(s, r.Token); ok {
					add(m.keep(n, c), true)
				}
			}
		}
	case "renew":
		if r.Kind == history.OK {
			if r.Token == 0 || r.Token == c.Token {
				add(m.renewed(s, c))
			}
			break
		}
		// lease_lost: not this lease, or it expired by now.
		mine, ok := lease{}, false
		if s.Held && s.Holder == c.Holder {
			mine, ok = bind(s, c.Token)
		}
		if !ok || s.Token == 0 {
			add(s, true)
		}
		if ok {
			add(m.expire(mine, c.Return))
			if r.State == "expired" {
				// The leader saw the deadline pass; the Expire that
				// frees the key may still be on its way.
				mine.Now = max(mine.Now, mine.Until)
				add(mine, true)
			}
		}
	case "release":
		add(released(s, c))
		if !s.Held || s.Holder != c.Holder || s.Token != c.Token {
			add(s, true) // not that lease: nothing to free
		}
	case "read":
		m.read(s, c, r, add)
	}
	return out
}

func (m registerModel) read(s lease, c call, r reply, add func(lease, bool)) {
	switch {
	case r.State == "held":
		if s.Held && s.Holder == r.Holder {
			add(bind(s, r.Token))
		}
	case r.Holder == "" && r.Token == 0: // never held
		if s.Holder == "" {
			add(s, true)
		}
	default: // free, with its last holder and token
		if !s.Held && s.Holder == r.Holder {
			add(bind(s, r.Token))
		}
		if e, ok := m.expire(s, c.Return); ok && e.Holder == r.Holder {
			add(bind(e, r.Token))
		}
	}
}

func (m registerModel) describeState(s lease) string {
	tok := "token ?"
	if s.Token != 0 {
		tok = "token " + strconv.FormatUint(s.Token, 10)
	}
	var d string
	switch {
	case s.Held:
		d = fmt.Sprintf("held by %s, %s, may expire from %s", s.Holder, tok, m.clock.ms(s.Until))
	case s.Holder != "":
		d = fmt.Sprintf("free, last %s %s", s.Holder, tok)
	default:
		d = "free, never held"
	}
	if s.Holder != "" {
		d += ", now ≥ " + m.clock.ms(s.Now)
	}
	n := 0
	for i := 0; 2*i+1 < len(s.Fired); i++ {
		n += count(s.Fired, i)
	}
	if n > 0 {
		d += fmt.Sprintf(", %d indeterminate applied", n)
	}
	return d
}

func (m registerModel) describeInput(c call) string {
	switch c.F {
	case "acquire":
		return fmt.Sprintf("%s %s acquire(%s, ttl %s)", c.Proc, c.Key, c.Holder, dur(c.TTL))
	case "renew", "release":
		return fmt.Sprintf("%s %s %s(%s, %d)", c.Proc, c.Key, c.F, c.Holder, c.Token)
	}
	return fmt.Sprintf("%s %s %s()", c.Proc, c.Key, c.F)
}

func (m registerModel) describeCall(c call, r reply) string {
	var out string
	switch {
	case r.Kind == history.Fail && r.Err == "held":
		out = fmt.Sprintf("held by %s %d", r.Holder, r.Token)
	case r.Kind == history.Fail:
		out = r.Err
		if r.State != "" {
			out += " (" + r.State + ")"
		}
	case c.F == "acquire" && r.Created:
		out = fmt.Sprintf("granted %d", r.Token)
	case c.F == "acquire":
		out = fmt.Sprintf("kept %d", r.Token)
	case c.F == "read" && r.Holder == "":
		out = r.State
	case c.F == "read":
		out = fmt.Sprintf("%s %s %d", r.State, r.Holder, r.Token)
	default:
		out = "ok"
	}
	return fmt.Sprintf("%s → %s [%s, %s]", m.describeInput(c), out, m.clock.ms(c.Call), m.clock.ms(c.Return))
}
