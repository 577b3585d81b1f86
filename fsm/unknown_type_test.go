package fsm

import (
	"fmt"
	"strings"
	"testing"
)

// TestApplyUnknownType checks the rule for command types this build does
// not know: panic (so that a replica never silently diverges) unless the
// writer flagged the type ignorable.
func TestApplyUnknownType(t *testing.T) {
	ignorable := []byte{byte(IgnorableFlag | 0x11), version1, 0xde, 0xad}
	ignorableNewVersion := []byte{byte(IgnorableFlag | 0x7f), 9}
	tests := []struct {
		name  string
		data  []byte
		panic bool
		// want is the result when Apply does not panic.
		want interface{}
	}{
		{name: "unknown type", data: []byte{byte(unusedType), version1}, panic: true},
		{name: "unknown type with a payload", data: []byte{0x42, version1, 1, 2, 3}, panic: true},
		{name: "type zero", data: []byte{0x00, version1}, panic: true},
		{name: "known type with the ignorable flag means another command", data: append([]byte{byte(TypeRevoke | IgnorableFlag)}, encodePlain(Revoke{Key: "a"})[1:]...), want: Result{Code: Done}},
		{name: "ignorable unknown type", data: ignorable, want: Result{Code: Done}},
		{name: "ignorable unknown type of an unknown version", data: ignorableNewVersion, want: Result{Code: Done}},
		{name: "ignorable unknown type in an envelope", data: sealed([]byte{byte(IgnorableFlag | 0x11), envelopeFlag | version1, 0xde, 0xad}), want: Result{Code: Done}},
		{name: "unknown type in an envelope", data: sealed([]byte{byte(unusedType), envelopeFlag | version1}), panic: true},
		{name: "unknown version in an envelope", data: sealed([]byte{byte(TypeRevoke), envelopeFlag | 2, 1, 'a'}), panic: true},
		{name: "damaged envelope", data: flipped(Encode(Revoke{Key: "a"}), 3), panic: true},
		{
			name: "ignorable unknown type inside a batch",
			data: rawBatch(encodePlain(Revoke{Key: "a"}), ignorable, encodePlain(acquire("a", "w2"))),
			want: []Result{{Code: Freed}, {Code: Done}, {Code: Granted}},
		},
		{name: "unknown type inside a batch", data: rawBatch(encodePlain(Revoke{Key: "a"}), []byte{byte(unusedType), version1}), panic: true},
		{name: "malformed placement command", data: []byte{byte(TypeWorkerDrain), version1, 1, 'w', 2}, panic: true},
		{name: "placement command before an unknown type in a batch", data: rawBatch(encodePlain(WorkerDrain{Worker: "w", Draining: true}), []byte{byte(unusedType), version1}), panic: true},
		{name: "unknown version", data: append([]byte{byte(TypeRevoke), 2}, encodePlain(Revoke{Key: "a"})[2:]...), panic: true},
		{name: "unknown version inside a batch", data: rawBatch(encodePlain(Revoke{Key: "a"}), []byte{byte(TypeLeaderEstablished), 0, 5}), panic: true},
		{name: "nested batch", data: rawBatch(encodePlain(Revoke{Key: "a"}), encodePlain(Batch{})), panic: true},
		{name: "truncated command", data: encodePlain(acquire("a", "w2"))[:5], panic: true},
		{name: "empty entry", data: nil, panic: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t)
			n.one(Acquire{Key: "a", Holder: "w1", TTL: ttl, Metadata: map[string]string{"m": "1"}, Time: wall})
			before := viewOf(n.m)
			changed := n.m.Changed()

			if tt.panic {
				v := mustPanic(t, func() { n.applyRaw(tt.data) })
				if msg := fmt.Sprint(v); !strings.Contains(msg, "index 2") {
					t.Errorf("panic %q does not name the entry's index 2", msg)
				}
				// Nothing of the entry is applied, not even the part of a
				// batch before the bad command.
				assertView(t, viewOf(n.m), before)
				if isClosed(changed) {
					t.Error("Changed() closed by an entry that was not applied")
				}
				return
			}

			got := n.applyRaw(tt.data)
			if !sameCodes(got, tt.want) {
				t.Fatalf("Apply = %s, want codes of %s", codes(got), codes(tt.want))
			}
			if _, single := tt.want.(Result); single {
				// An ignored entry changes nothing but the applied index.
				want := before
				want.Applied = 2
				assertView(t, viewOf(n.m), want)
				if isClosed(changed) {
					t.Error("Changed() closed by an ignored entry")
				}
			}
		})
	}
}

func codes(v interface{}) string {
	switch v := v.(type) {
	case Result:
		return v.Code.String()
	case []Result:
		s := make([]string, len(v))
		for i, r := range v {
			s[i] = r.Code.String()
		}
		return "[" + strings.Join(s, " ") + "]"
	}
	return fmt.Sprintf("%T", v)
}

func sameCodes(got, want interface{}) bool {
	switch w := want.(type) {
	case Result:
		g, ok := got.(Result)
		return ok && g.Code == w.Code
	case []Result:
		g, ok := got.([]Result)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if g[i].Code != w[i].Code {
				return false
			}
		}
		return true
	}
	return false
}
