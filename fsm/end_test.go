package fsm

import (
	"bytes"
	"testing"
)

// TestEndedLeaseIsNeverKept: an ended lease stays held against everyone,
// its own holder included, until the leader's Expire frees it with the
// ending reason; a Release by its holder still frees it as released.
func TestEndedLeaseIsNeverKept(t *testing.T) {
	tests := []struct {
		name  string
		end   Command
		cmd   Command
		code  Code
		held  bool
		why   Reason // the key's Reason after cmd (free) or its Ending (held)
		ended int    // len(Result.Ended) of end
	}{
		{name: "revoked: its holder's acquire is refused", end: End{Key: "a"}, cmd: acquire("a", "w1"), code: Held, held: true, why: ReasonRevoked, ended: 1},
		{name: "revoked: another holder's acquire is refused", end: End{Key: "a"}, cmd: acquire("a", "w2"), code: Held, held: true, why: ReasonRevoked, ended: 1},
		{name: "revoked: expire frees it as revoked", end: End{Key: "a"}, cmd: Expire{Key: "a", Token: 1, Term: 1}, code: Freed, why: ReasonRevoked, ended: 1},
		{name: "revoked: release frees it as released", end: End{Key: "a"}, cmd: Release{Key: "a", Holder: "w1", Token: 1}, code: Freed, why: ReasonReleased, ended: 1},
		{name: "revoked by holder", end: End{Holder: "w1"}, cmd: Expire{Key: "a", Token: 1, Term: 1}, code: Freed, why: ReasonRevoked, ended: 1},
		{name: "revoke of another holder's key changes nothing", end: End{Key: "a", Holder: "w9"}, cmd: acquire("a", "w1"), code: Kept, held: true, ended: 0},
		{name: "disabled: expire frees it as disabled", end: SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}}, cmd: Expire{Key: "a", Token: 1, Term: 1}, code: Freed, why: ReasonDisabled, ended: 1},
		{name: "prohibited: expire frees it as prohibited", end: SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{"w1"}}}, cmd: Expire{Key: "a", Token: 1, Term: 1}, code: Freed, why: ReasonProhibited, ended: 1},
		{name: "prohibiting another holder changes nothing", end: SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{"w2"}}}, cmd: acquire("a", "w1"), code: Kept, held: true, ended: 0},
		{name: "prohibited worker holder", end: SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{"w1"}}}, cmd: acquire("a", "w3"), code: Prohibited, held: true, why: ReasonProhibited, ended: 1},
		{name: "forced revoke frees at once", end: End{Key: "a", Force: true}, cmd: acquire("a", "w2"), code: Granted, held: true, ended: 1},
		{name: "forced disable frees at once", end: SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}, Force: true}, cmd: acquire("a", "w2"), code: Disabled, why: ReasonDisabled, ended: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode(t)
			holder := "w1"
			if tt.name == "prohibited worker holder" {
				holder = "w1#3"
			}
			n.one(acquire("a", holder))
			if r := n.one(tt.end); len(r.Ended) != tt.ended {
				t.Fatalf("%#v ended %d leases, want %d", tt.end, len(r.Ended), tt.ended)
			}
			if c, ok := tt.cmd.(Acquire); ok && c.Holder == "w3" {
				tt.cmd = acquire("a", holder) // the prohibited worker itself
			}
			r := n.one(tt.cmd)
			if r.Code != tt.code {
				t.Fatalf("%#v = %v, want %v", tt.cmd, r.Code, tt.code)
			}
			l := n.m.Get("a")
			why := l.Reason
			if l.Held {
				why = l.Ending
			}
			if l.Held != tt.held || why != tt.why {
				t.Errorf("lease after = held %v reason %v ending %v, want held %v, %v", l.Held, l.Reason, l.Ending, tt.held, tt.why)
			}
		})
	}
}

// TestEndResults: an End names the leases it ended, in key order, so that
// the leader can start their ending deadlines; a second End of an ending
// lease keeps it as it was.
func TestEndResults(t *testing.T) {
	n := newNode(t)
	n.all(acquire("c", "w1"), acquire("a", "w1"), acquire("b", "w2"))
	r := n.one(End{Holder: "w1"})
	if r.Code != Done || len(r.Ended) != 2 || r.Ended[0].Key != "a" || r.Ended[1].Key != "c" {
		t.Fatalf("End{Holder: w1} = %v %v, want done with a and c", r.Code, r.Ended)
	}
	for _, l := range r.Ended {
		if !l.Held || l.Ending != ReasonRevoked {
			t.Errorf("%s after End = held %v ending %v, want held and revoked", l.Key, l.Held, l.Ending)
		}
	}
	before := n.m.Get("a")
	if again := n.one(End{Key: "a"}); again.Code != Ending || again.Lease != before {
		t.Errorf("second End of a = %v %s, want ending with the same record", again.Code, leaseString(again.Lease))
	}
	if got := n.one(SetKeyControl{Key: "a", Control: KeyControl{Disabled: true}}); len(got.Ended) != 0 {
		t.Errorf("disabling an ending lease ended %v, want nothing (its deadline stands)", got.Ended)
	}
	if got := n.one(End{Key: "a", Force: true}); got.Code != Freed || got.Lease.Reason != ReasonRevoked {
		t.Errorf("forced End of an ending lease = %v %s, want freed as revoked", got.Code, leaseString(got.Lease))
	}
	if got := n.one(End{Key: "never"}); got.Code != NotFound {
		t.Errorf("End of a key never seen = %v, want not found", got.Code)
	}
	if got := n.one(End{Key: "a"}); got.Code != NotHeld {
		t.Errorf("End of a free key = %v, want not held", got.Code)
	}
}

// TestEndingSurvivesSnapshot: a server that starts from a snapshot still
// refuses to keep an ending lease.
func TestEndingSurvivesSnapshot(t *testing.T) {
	n := newNode(t)
	n.all(acquire("a", "w1"), acquire("b", "w2"), End{Key: "a"}, SetKeyControl{Key: "b", Control: KeyControl{Disabled: true}})
	m := restoredFrom(t, n.m.snapshotBytes())
	for key, want := range map[string]Reason{"a": ReasonRevoked, "b": ReasonDisabled} {
		if l := m.Get(key); !l.Held || l.Ending != want {
			t.Errorf("%s after restore = held %v ending %v, want held, %v", key, l.Held, l.Ending, want)
		}
	}
	r := m.Apply(logEntry(10, 1, acquire("a", "w1"))).(Result)
	if r.Code != Held {
		t.Errorf("acquire of a by its holder after restore = %v, want held", r.Code)
	}
}

// TestRestoreRefusesBadEndingSection: the version 4 section may only name
// held leases, in order, with an ending reason.
func TestRestoreRefusesBadEndingSection(t *testing.T) {
	n := newNode(t)
	n.all(acquire("a", "w1"), acquire("b", "w1"), End{Key: "a"})
	good := n.m.snapshotBytes()
	// The section is the last bytes of the body before the cluster id (an
	// empty one: 0), the secret hashes (none: 0), the backup key (an
	// empty one: 0), the balances (none: 0) and the prepares (none: 0):
	// count 1, key "a", reason.
	body := good[:len(good)-9]
	if !bytes.HasSuffix(body, []byte{1, 1, 'a', byte(ReasonRevoked)}) {
		t.Fatalf("unexpected section: %x", body[len(body)-8:])
	}
	patch := func(tail ...byte) []byte {
		b := append(bytes.Clone(body[:len(body)-4]), tail...)
		return withCRC(append(b, 0, 0, 0, 0, 0, 0, 0, 0, 0))
	}
	for name, data := range map[string][]byte{
		"reason released": patch(1, 1, 'a', byte(ReasonReleased)),
		"unknown reason":  patch(1, 1, 'a', 9),
		"unknown key":     patch(1, 1, 'z', byte(ReasonRevoked)),
		"out of order":    patch(2, 1, 'b', byte(ReasonRevoked), 1, 'a', byte(ReasonRevoked)),
	} {
		t.Run(name, func(t *testing.T) { assertRestoreRefused(t, data, "ending lease") })
	}
}

// A key control written before controls ended leases (type 10) applies as
// it did then: a held lease of a holder it refuses stays held, not ending,
// and its holder keeps it; only the controls written since (type 28) end
// the lease. Replicas that replay an old log so reach the same state as
// the servers that wrote it.
func TestOldKeyControlLeavesTheLeaseAlone(t *testing.T) {
	old := SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{"w1"}}, KeepsHolder: true}
	if b := Encode(old); Type(b[0]) != TypeKeyControl {
		t.Fatalf("an old control encodes as type %d, want %d", b[0], TypeKeyControl)
	}
	decoded, err := Decode(Encode(SetKeyControl{Key: "a"}))
	if err != nil || Encode(decoded)[0] != byte(TypeKeyControlEnd) {
		t.Fatalf("a control written today decodes as %+v, %v: want type %d", decoded, err, TypeKeyControlEnd)
	}
	n := newNode(t)
	n.all(acquire("a", "w1"))
	raw := Encode(old)
	cmd, err := Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	if r := n.one(cmd); len(r.Ended) != 0 {
		t.Fatalf("old control ended %+v", r.Ended)
	}
	if l := n.m.Get("a"); !l.Held || l.Ending != ReasonNone {
		t.Fatalf("after an old control: %+v, want held and not ending", l)
	}
	n.all(SetKeyControl{Key: "a"}) // cleared
	if r := n.one(acquire("a", "w1")); r.Code != Kept {
		t.Fatalf("re-acquire after the old control was cleared: %v, want kept", r.Code)
	}
	// The same control written today ends the lease.
	r := n.one(SetKeyControl{Key: "a", Control: KeyControl{Prohibited: []string{"w1"}}})
	if len(r.Ended) != 1 || n.m.Get("a").Ending != ReasonProhibited {
		t.Fatalf("a control written today: ended %+v, lease %+v; want it ending (prohibited)", r.Ended, n.m.Get("a"))
	}
}
