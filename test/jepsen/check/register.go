package check

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/tenure-io/tenure/test/jepsen/history"
)

// RegisterConfig tunes Register.
type RegisterConfig struct {
	// MinExpiry is the shortest time, in nanoseconds, after which a lease
	// of the given TTL may expire, counted from the acquire or renew that
	// last extended it. Nil means the TTL itself; pass less to allow for a
	// leader's clock running fast.
	MinExpiry func(ttl int64) int64
	// HTMLPath, when set, receives porcupine's visualization of the
	// history and its (partial) linearizations, valid or not.
	HTMLPath string
	// Timeout bounds the search; 0 means none. When it runs out the
	// result is Unknown and not valid: a history that was not checked
	// is no pass.
	Timeout time.Duration
}

// Register checks that the register workload's operations are
// linearizable against the lease model, each key on its own, and writes
// porcupine's visualization to cfg.HTMLPath (valid or not).
//
// Operations are Invoke events (Proc, Op, F = acquire, renew, release or
// read, Key, Holder, Token, TTL) paired by Proc and Op with an OK, Fail or
// Info completion; pass only the register workload's events. An invoke
// without a completion counts as Info; a completion without an invoke is
// counted in a Note and ignored. A Fail other than acquire's "held" and
// renew's "lease_lost" is a refusal that changed nothing, and an Info read
// changes nothing: both are left out and counted in a Note.
//
// The state of a key is free or held by (holder, token) with a TTL and an
// earliest expiry, plus the highest token granted on it. Every operation
// takes effect at a point between its invoke and its completion, points
// in linearization order never decrease, and:
//
//   - a grant (acquire OK with Created) needs the key free and a token
//     above every token granted on the key before;
//   - acquire OK without Created needs the key held by the caller under
//     the reported token; renew OK needs it held by (holder, token);
//   - acquire Fail "held" needs the key held by the reported holder and
//     token, another holder than the caller;
//   - renew Fail "lease_lost" needs the lease not to be (holder, token), or
//     to expire by then; with the reason "expired" the key may still be
//     held afterwards (the Expire is on its way through Raft);
//   - release OK frees the key if (holder, token) is the current lease and
//     changes nothing otherwise;
//   - read OK shows the current holder and token, "free" with the last
//     ones, or "free" with neither (token 0) for a key never held;
//   - a lease may expire, becoming free, at any point at or after its
//     earliest expiry: p + MinExpiry(TTL), where p is the point of the
//     grant or renew that last extended it (a same-holder acquire never
//     moves it earlier), and TTL that of the holder's last acquire. The
//     point p is counted as the earliest the linearization allows: the
//     invoke of that operation, or later if an operation linearized
//     before it was invoked later, or an expiry came before it. So an
//     operation that needs a lease gone (another holder's grant, a grant
//     to the same holder over its own lease, a read showing it free, a
//     renew failing) must complete after that lease's earliest expiry,
//     and operations linearized after it as well.
//
// An Info operation either never took effect or took effect once, at some
// point after its invoke. An indeterminate acquire that granted the key
// leaves the token unknown (above every earlier one) until an operation
// reveals it, and its lease's earliest expiry is counted from its invoke
// (see register_infos.go for how the model applies these operations
// without porcupine trying each at every point).
//
// Operator revocations are not modelled: the workload must not revoke its
// keys nor share them with another workload. If the search runs out of
// time (porcupine answers Unknown), the result is Unknown and not Valid:
// a violation says that linearizability was not checked, and a Note names
// each key left undecided.
func Register(events []history.Event, cfg RegisterConfig) Result {
	v := newVerdict("linearizable lease register")
	if cfg.MinExpiry == nil {
		cfg.MinExpiry = func(ttl int64) int64 { return ttl }
	}
	clk := clock{t0: firstT(events)}
	known, infos := pairCalls(events, v)
	infos = drop(known, infos)
	m := registerModel{minExpiry: cfg.MinExpiry, clock: clk, infos: indexInfos(known, infos)}
	keys, hist, procs := registerHistory(known, infos)
	if len(hist) == 0 {
		v.note("no register operations to check")
		return v.done()
	}
	model := m.porcupineModel()
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(model, hist, cfg.Timeout)
	elapsed := time.Since(start)
	v.note("checked %d operations on %d keys in %s", len(hist), len(keys), elapsed.Round(100*time.Microsecond))
	where := "no visualization was asked for"
	if cfg.HTMLPath != "" {
		where = "see " + cfg.HTMLPath
		info.AddAnnotations(m.annotations(infos, procs, hist))
		if err := porcupine.VisualizePath(model, info, cfg.HTMLPath); err != nil {
			v.note("cannot write the visualization: %v", err)
		}
	}
	timedOut := cfg.Timeout > 0 && elapsed >= cfg.Timeout
	if res == porcupine.Unknown {
		v.Unknown = true
		v.fail("porcupine timed out after %s: linearizability not checked (a history not checked is no pass); %s", cfg.Timeout, where)
	}
	partials := info.PartialLinearizations()
	for p, key := range keys {
		ops := partitionOf(hist, key)
		best := longest(partials, p)
		if len(best) == len(ops) {
			continue
		}
		switch {
		case res == porcupine.Unknown:
			v.note("key %q undecided: no linearization of its %d operations found in time", key, len(ops))
		default:
			maybe := ""
			if timedOut {
				maybe = " (or the search was cut short by the timeout)"
			}
			v.fail("key %q: no linearization of its %d operations%s; the longest found covers %d, "+
				"and the earliest operation it leaves out is %s; %s",
				key, len(ops), maybe, len(best), m.describeCall(earliestLeftOut(ops, best)), where)
		}
	}
	if res == porcupine.Illegal && v.Valid {
		v.fail("porcupine found the history not linearizable, but no key is incomplete; %s", where)
	}
	return v.done()
}

// porcupineModel wraps the key model for porcupine, partitioned by key.
func (m registerModel) porcupineModel() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
			keys := registerKeys(h)
			out := make([][]porcupine.Operation, len(keys))
			for i, k := range keys {
				out[i] = partitionOf(h, k)
			}
			return out
		},
		Init: func() []interface{} { return []interface{}{lease{}} },
		Step: func(state, input, output interface{}) []interface{} {
			next := m.step(state.(lease), input.(call), output.(reply))
			out := make([]interface{}, len(next))
			for i, n := range next {
				out[i] = n
			}
			return out
		},
		Hash: func(state interface{}) uint64 { return hashLease(state.(lease)) },
		DescribeOperation: func(input, output interface{}) string {
			return m.describeCall(input.(call), output.(reply))
		},
		DescribeState: func(state interface{}) string { return m.describeState(state.(lease)) },
	}
	return nm.ToModel()
}

// registerHistory turns the operations of known outcome into porcupine
// operations, ordered by key; it returns the keys in that order and the
// client number of every process (those of the indeterminate operations
// too, for the visualization).
func registerHistory(known []pairedCall, infos []call) ([]string, []porcupine.Operation, map[string]int) {
	procs := map[string]int{}
	var names []string
	note := func(p string) {
		if _, ok := procs[p]; !ok {
			procs[p] = 0
			names = append(names, p)
		}
	}
	for _, c := range known {
		note(c.in.Proc)
	}
	for _, c := range infos {
		note(c.Proc)
	}
	sort.Strings(names)
	for i, n := range names {
		procs[n] = i
	}
	hist := make([]porcupine.Operation, 0, len(known))
	for _, c := range known {
		hist = append(hist, porcupine.Operation{
			ClientId: procs[c.in.Proc], Input: c.in, Call: c.in.Call, Output: c.out, Return: c.in.Return,
		})
	}
	sort.SliceStable(hist, func(i, j int) bool { return hist[i].Input.(call).Key < hist[j].Input.(call).Key })
	return registerKeys(hist), hist, procs
}

// annotations shows the operations of unknown outcome on their process's
// line of the visualization, up to the last point they may take effect
// (or the end of the history).
func (m registerModel) annotations(infos []call, procs map[string]int, hist []porcupine.Operation) []porcupine.Annotation {
	var last int64
	for _, op := range hist {
		last = max(last, op.Return)
	}
	out := make([]porcupine.Annotation, 0, len(infos))
	for _, c := range infos {
		out = append(out, porcupine.Annotation{
			ClientId:    procs[c.Proc],
			Start:       c.Call,
			End:         max(c.Call, min(c.Return, last)),
			Description: m.describeInput(c) + " → ?",
			Details:     fmt.Sprintf("outcome unknown; may take effect from %s", m.clock.ms(c.Call)),
		})
	}
	return out
}

// registerKeys returns the sorted keys of h.
func registerKeys(h []porcupine.Operation) []string {
	seen := map[string]bool{}
	var keys []string
	for _, op := range h {
		k := op.Input.(call).Key
		if !seen[k] {
			seen[k] = true
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// partitionOf returns the operations of key in h, in h's order: the same
// order porcupine numbers them in.
func partitionOf(h []porcupine.Operation, key string) []porcupine.Operation {
	var out []porcupine.Operation
	for _, op := range h {
		if op.Input.(call).Key == key {
			out = append(out, op)
		}
	}
	return out
}

// longest returns the longest partial linearization of partition p.
func longest(partials [][][]int, p int) []int {
	var best []int
	if p < len(partials) {
		for _, l := range partials[p] {
			if len(l) > len(best) {
				best = l
			}
		}
	}
	return best
}

// earliestLeftOut returns the operation with the earliest invoke among
// those that the partial linearization best does not cover.
func earliestLeftOut(ops []porcupine.Operation, best []int) (call, reply) {
	in := make(map[int]bool, len(best))
	for _, id := range best {
		in[id] = true
	}
	pick := -1
	for i, op := range ops {
		if !in[i] && (pick < 0 || op.Call < ops[pick].Call) {
			pick = i
		}
	}
	return ops[pick].Input.(call), ops[pick].Output.(reply)
}

// firstT is the earliest T in events (0 for none).
func firstT(events []history.Event) int64 {
	t0 := int64(math.MaxInt64)
	for _, e := range events {
		if e.T != 0 && e.T < t0 {
			t0 = e.T
		}
	}
	if t0 == math.MaxInt64 {
		return 0
	}
	return t0
}
