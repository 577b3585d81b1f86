package fsm

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

func token(id, hash string, policies ...string) ACLToken {
	return ACLToken{AccessorID: id, SecretHash: hash, Policies: policies, CreateTime: wall}
}

// Each ACL command's outcome and the state it leaves, in one log.
func TestACLApply(t *testing.T) {
	n := newNode(t)
	steps := []struct {
		name string
		cmd  Command
		want Code
	}{
		{"bootstrap", ACLBootstrap{Token: ACLToken{AccessorID: "boot", SecretHash: "h-boot", Management: true}}, Done},
		{"second bootstrap refused", ACLBootstrap{Token: ACLToken{AccessorID: "boot2", SecretHash: "h-boot2", Management: true}}, Refused},
		{"policy", ACLPolicySet{Policy: ACLPolicy{Name: "p", Rules: []ACLRule{{Prefix: "a/", Rights: RightRead}}}}, Done},
		{"token", ACLTokenSet{Token: token("t1", "h1", "p", "p", "gone")}, Done},
		{"token with a taken hash refused", ACLTokenSet{Token: token("t2", "h1")}, Refused},
		{"token replaced under a new hash", ACLTokenSet{Token: token("t1", "h1b", "p")}, Done},
		{"policy replaced", ACLPolicySet{Policy: ACLPolicy{Name: "p", Rules: []ACLRule{{Prefix: "b/", Rights: RightWrite}}}}, Done},
		{"delete unknown token", ACLTokenDelete{AccessorID: "nope"}, NotFound},
		{"delete unknown policy", ACLPolicyDelete{Name: "nope"}, NotFound},
		{"register", WorkerRegister{Worker: "w1", Groups: []string{"g2", "g1", "g2"}, Accessor: "t1"}, Done},
		{"delete boot", ACLTokenDelete{AccessorID: "boot"}, Done},
		{"bootstrap after the boot token is gone still refused", ACLBootstrap{Token: ACLToken{AccessorID: "boot3", SecretHash: "h3"}}, Refused},
	}
	for _, s := range steps {
		if got := n.one(s.cmd).Code; got != s.want {
			t.Errorf("%s: got %v, want %v", s.name, got, s.want)
		}
	}
	m := n.m
	if !m.ACLBootstrapped() {
		t.Error("ACLBootstrapped() = false after a bootstrap")
	}
	if m.ACLTokenByHash("h-boot") != nil || m.ACLToken("boot") != nil {
		t.Error("the deleted boot token is still found")
	}
	if m.ACLTokenByHash("h1") != nil {
		t.Error("the replaced token is still found under its old hash")
	}
	got := m.ACLTokenByHash("h1b")
	want := &ACLToken{AccessorID: "t1", SecretHash: "h1b", Policies: []string{"p"}, CreateTime: wall, CreateIndex: 6}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ACLTokenByHash(h1b) = %+v, want %+v", got, want)
	}
	p := m.ACLPolicy("p")
	if p == nil || p.CreateIndex != 3 || p.ModifyIndex != 7 || !reflect.DeepEqual(p.Rules, []ACLRule{{Prefix: "b/", Rights: RightWrite}}) {
		t.Errorf("ACLPolicy(p) = %+v, want the replacement, created at 3 and modified at 7", p)
	}
	if r := m.WorkerRegistration("w1"); r == nil || !reflect.DeepEqual(r.Groups, []string{"g1", "g2"}) || r.Accessor != "t1" || r.Index != 10 {
		t.Errorf("WorkerRegistration(w1) = %+v, want groups [g1 g2] by t1 at 10", r)
	}
	if got := m.GroupIndex(); got != 10 {
		t.Errorf("GroupIndex() = %d, want 10: a registration is placement state", got)
	}
	if got := m.ACLIndex(); got != 11 {
		t.Errorf("ACLIndex() = %d, want 11", got)
	}
	tokens, _ := m.ACLTokens()
	if len(tokens) != 1 || tokens[0].AccessorID != "t1" {
		t.Errorf("ACLTokens() = %v, want only t1", tokens)
	}
}

// An ACL change wakes blocking queries and the balancer, like a lease
// change.
func TestACLChangeClosesChanged(t *testing.T) {
	n := newNode(t)
	ch := n.m.Changed()
	n.one(ACLPolicySet{Policy: ACLPolicy{Name: "p"}})
	if !isClosed(ch) {
		t.Error("Changed() not closed by a policy change")
	}
	ch = n.m.Changed()
	n.one(ACLTokenDelete{AccessorID: "missing"})
	if isClosed(ch) {
		t.Error("Changed() closed by a delete that found nothing")
	}
}

func TestRightNames(t *testing.T) {
	for _, name := range []string{"read", "write", "revoke", "groups", "operator", "acl"} {
		r, err := ParseRight(name)
		if err != nil || r.String() != name {
			t.Errorf("ParseRight(%q) = %v, %v; want a right named %q", name, r, err, name)
		}
	}
	if _, err := ParseRight("admin"); err == nil {
		t.Error("ParseRight(admin) succeeded")
	}
	if got := (RightRead | RightACL).String(); got != "read,acl" {
		t.Errorf("String() = %q, want read,acl", got)
	}
	if got := RightAll.Names(); len(got) != 8 {
		t.Errorf("RightAll.Names() = %v, want eight names", got)
	}
	for _, c := range []struct{ r, want Right }{
		{RightOperator, RightOperator | RightDebug | RightMetrics},
		{RightDebug, RightDebug | RightMetrics},
		{RightMetrics, RightMetrics},
		{RightACL | RightRead, RightACL | RightRead},
	} {
		if got := c.r.Implied(); got != c.want {
			t.Errorf("(%s).Implied() = %s, want %s", c.r, got, c.want)
		}
	}
}

// randomACLLog returns n entries of ACL commands and registrations from
// seed, over few ids and names so that they collide.
func randomACLLog(seed uint64, n int) []entry {
	r := rand.New(rand.NewPCG(seed, seed^0xac1))
	pick := func(prefix string, k int) string { return fmt.Sprintf("%s%d", prefix, r.IntN(k)) }
	log := make([]entry, 0, n)
	for i := 0; i < n; i++ {
		var c Command
		switch p := r.IntN(100); {
		case p < 2:
			c = ACLBootstrap{Token: ACLToken{AccessorID: pick("boot-", 3), SecretHash: pick("hb-", 3), Management: true, CreateTime: wall + int64(i)}}
		case p < 35:
			t := ACLToken{AccessorID: pick("acc-", 60), SecretHash: pick("h-", 80), Description: pick("d", 5),
				HolderPrefix: pick("w-", 4), Management: r.IntN(10) == 0, CreateTime: wall + int64(i)}
			for j := r.IntN(4); j > 0; j-- {
				t.Policies = append(t.Policies, pick("pol-", 8))
			}
			c = ACLTokenSet{Token: t}
		case p < 50:
			c = ACLTokenDelete{AccessorID: pick("acc-", 60)}
		case p < 75:
			pol := ACLPolicy{Name: pick("pol-", 8), Description: pick("d", 3)}
			for j := r.IntN(4); j > 0; j-- {
				pol.Rules = append(pol.Rules, ACLRule{Prefix: pick("k/", 5), Rights: Right(r.IntN(int(RightAll) + 1))})
			}
			c = ACLPolicySet{Policy: pol}
		case p < 85:
			c = ACLPolicyDelete{Name: pick("pol-", 8)}
		default:
			c = WorkerRegister{Worker: pick("w-", 20), Groups: []string{pick("g", 3), pick("g", 3)}, Accessor: pick("acc-", 60)}
		}
		if r.IntN(10) == 0 {
			c = Batch{Commands: []Command{c, ACLPolicyDelete{Name: pick("pol-", 8)}}}
		}
		log = append(log, entry{term: 1, data: Encode(c)})
	}
	return log
}

// Replicas that apply the same ACL log write the same snapshot, whatever
// the order in which their maps were filled.
func TestACLSameLogSameSnapshot(t *testing.T) {
	for seed := uint64(1); seed <= 5; seed++ {
		log := randomACLLog(seed, 2000)
		a, b := replay(t, log), replay(t, log)
		want := a.snapshotBytes()
		if tokens, _ := a.ACLTokens(); len(tokens) < 20 {
			t.Fatalf("seed %d: only %d tokens: too few to exercise map order", seed, len(tokens))
		}
		if !bytes.Equal(b.snapshotBytes(), want) {
			t.Fatalf("seed %d: replica b's snapshot differs from a's", seed)
		}
		// The same state in maps filled in other orders.
		r := rand.New(rand.NewPCG(seed, 1))
		st := aclOf(a)
		for trial := 0; trial < 10; trial++ {
			m := replay(t, log)
			m.acl = newACLState()
			for _, k := range shuffled(r, sortedKeysOf(st.tokens)) {
				m.acl.tokens[k] = st.tokens[k]
				m.acl.byHash[st.tokens[k].SecretHash] = k
			}
			for _, k := range shuffled(r, sortedKeysOf(st.policies)) {
				m.acl.policies[k] = st.policies[k]
			}
			for _, k := range shuffled(r, sortedKeysOf(st.workers)) {
				m.acl.workers[k] = st.workers[k]
			}
			m.acl.bootstrapped, m.acl.index = st.bootstrapped, st.index
			if !bytes.Equal(m.snapshotBytes(), want) {
				t.Fatalf("seed %d trial %d: snapshot depends on map insertion order", seed, trial)
			}
		}
	}
}

func shuffled(r *rand.Rand, s []string) []string {
	out := make([]string, len(s))
	for i, j := range r.Perm(len(s)) {
		out[i] = s[j]
	}
	return out
}

// A snapshot with a broken ACL part is refused, and the state is kept.
func TestRestoreRefusesBadACLPart(t *testing.T) {
	frame := func(acl func(e *encoder)) []byte {
		return frameSnapshot(3, func(e *encoder) {
			rawLeases(e, 0, nil)
			encodePlacement(e, state{})
			acl(e)
		})
	}
	tok := func(e *encoder, id, hash string, policies ...string) {
		encodeToken(e, ACLToken{AccessorID: id, SecretHash: hash, Policies: policies})
		e.uvarint(1)
	}
	// tokens is a snapshot whose ACL part (index 1) has no policy, the n
	// tokens that add writes, and no worker registration.
	tokens := func(bootstrapped bool, n uint64, add func(e *encoder)) []byte {
		return frame(func(e *encoder) {
			e.bool(bootstrapped)
			e.uvarint(1)
			e.uvarint(0)
			e.uvarint(n)
			add(e)
			e.uvarint(0)
		})
	}
	tests := []struct {
		name string
		data []byte
		msg  string
	}{
		{"tokens out of order", tokens(true, 2, func(e *encoder) {
			tok(e, "b", "h1")
			tok(e, "a", "h2")
		}), "out of order"},
		{"two tokens with one hash", tokens(true, 2, func(e *encoder) {
			tok(e, "a", "h1")
			tok(e, "b", "h1")
		}), "secret hash"},
		{"policies of a token out of order", tokens(false, 1, func(e *encoder) {
			tok(e, "a", "h1", "q", "p")
		}), "out of order"},
		{"unknown right", frame(func(e *encoder) {
			e.bool(false)
			e.uvarint(1)
			e.uvarint(1)
			e.string("p")
			e.string("")
			e.uvarint(1)
			e.string("")
			e.uvarint(0x100)
			e.uvarint(1)
			e.uvarint(1)
			e.uvarint(0)
			e.uvarint(0)
		}), "rights"},
		{"no ACL part", frameSnapshot(3, func(e *encoder) {
			rawLeases(e, 0, nil)
			encodePlacement(e, state{})
		}), "unexpected end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assertRestoreRefused(t, tt.data, tt.msg)
		})
	}
}

// The secret never reaches the state machine: what a command carries is
// what a snapshot keeps, and neither holds anything but the hash.
func TestTokenCommandCarriesNoSecret(t *testing.T) {
	const secret = "a-secret-value"
	tk := ACLToken{AccessorID: "acc", SecretHash: "hash-of-it"}
	for _, b := range [][]byte{Encode(ACLTokenSet{Token: tk}), Encode(ACLBootstrap{Token: tk})} {
		if strings.Contains(string(b), secret) {
			t.Fatal("command bytes contain the secret")
		}
	}
	// The type has no field for a secret at all.
	if _, ok := reflect.TypeOf(ACLToken{}).FieldByName("Secret"); ok {
		t.Error("ACLToken has a Secret field")
	}
}
