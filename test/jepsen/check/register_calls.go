package check

import (
	"math"

	"github.com/tenure-io/tenure/test/jepsen/history"
)

// pairedCall is one register operation with its known outcome.
type pairedCall struct {
	in  call
	out reply
}

// pairCalls pairs the register workload's invokes with their completions.
// It returns the operations with a known outcome that can change or reveal
// the register, and the operations of unknown outcome (Info, or no
// completion) that may change it; it counts the rest in Notes on v and
// sets v.Ops to every operation seen.
func pairCalls(events []history.Event, v *verdict) (known []pairedCall, infos []call) {
	type opID struct {
		proc string
		op   int64
	}
	pending := map[opID]int{}
	var all []pairedCall
	unmatched, duplicate := 0, 0
	for _, e := range events {
		switch e.Kind {
		case history.Invoke:
			if !registerF(e.F) {
				continue
			}
			id := opID{e.Proc, e.Op}
			if _, ok := pending[id]; ok {
				duplicate++
				continue
			}
			pending[id] = len(all)
			all = append(all, pairedCall{
				in: call{Proc: e.Proc, Op: e.Op, Key: e.Key, F: e.F, Holder: e.Holder,
					Token: e.Token, TTL: e.TTL, Call: e.T, Return: math.MaxInt64},
				out: reply{Kind: history.Info},
			})
		case history.OK, history.Fail, history.Info:
			id := opID{e.Proc, e.Op}
			i, ok := pending[id]
			if !ok {
				if registerF(e.F) || e.F == "" {
					unmatched++
				}
				continue
			}
			delete(pending, id)
			if e.Kind == history.Info {
				continue
			}
			all[i].out = reply{Kind: e.Kind, Err: e.Err, State: e.State, Holder: e.Holder, Token: e.Token, Created: e.Created}
			all[i].in.Return = max(e.T, all[i].in.Call)
		}
	}
	v.Ops = len(all)
	refused, unknownReads := 0, 0
	for _, c := range all {
		switch {
		case c.out.Kind == history.Fail && !observes(c.in.F, c.out.Err):
			refused++
		case c.out.Kind == history.Info && c.in.F == "read":
			unknownReads++
		case c.out.Kind == history.Info:
			infos = append(infos, c.in)
		default:
			known = append(known, c)
		}
	}
	v.note("%d operations: %d with a known outcome, %d indeterminate (info or no completion) "+
		"acquires, renews and releases; %d refusals and %d indeterminate reads left out",
		len(all), len(known), len(infos), refused, unknownReads)
	if unmatched > 0 {
		v.note("%d completions without an invoke ignored", unmatched)
	}
	if duplicate > 0 {
		v.note("%d invokes reusing a pending (proc, op) ignored", duplicate)
	}
	return known, infos
}

// registerF reports whether f is an operation of the register workload.
func registerF(f string) bool {
	switch f {
	case "acquire", "renew", "release", "read":
		return true
	}
	return false
}

// drop removes the renews and releases of unknown outcome that can never
// take effect: those of a (holder, token) whose token an operation showed
// under another holder (a key never reuses a token, which the model
// checks anyway).
func drop(known []pairedCall, infos []call) []call {
	type grant struct {
		key   string
		token uint64
	}
	holders := map[grant]string{}
	for _, c := range known {
		holder, token := c.out.Holder, c.out.Token
		switch {
		case c.in.F == "acquire" && c.out.Kind == history.OK:
			holder = c.in.Holder
		case c.in.F == "renew" && c.out.Kind == history.OK:
			holder, token = c.in.Holder, c.in.Token
		}
		if token != 0 && holder != "" {
			holders[grant{c.in.Key, token}] = holder
		}
	}
	var out []call
	for _, c := range infos {
		if c.F == "renew" || c.F == "release" {
			if h, ok := holders[grant{c.Key, c.Token}]; ok && h != c.Holder {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}
