package membership

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/test/harness"
)

// noRaft is a Raft that gossip never needs to change: the members of these
// tests announce themselves as bootstrapped and never lead.
type noRaft struct{}

func (noRaft) BootstrapCluster(raft.Configuration) raft.Future { return nil }
func (noRaft) LastIndex() uint64                               { return 1 }
func (noRaft) CommitIndex() uint64                             { return 1 }
func (noRaft) CurrentTerm() uint64                             { return 1 }
func (noRaft) RemoveServer(raft.ServerID, uint64, time.Duration) raft.IndexFuture {
	return nil
}
func (noRaft) GetConfiguration() raft.ConfigurationFuture { return nil }
func (noRaft) AddVoter(raft.ServerID, raft.ServerAddress, uint64, time.Duration) raft.IndexFuture {
	return nil
}
func (noRaft) AddNonvoter(raft.ServerID, raft.ServerAddress, uint64, time.Duration) raft.IndexFuture {
	return nil
}
func (noRaft) DemoteVoter(raft.ServerID, uint64, time.Duration) raft.IndexFuture {
	return nil
}

func newKey(t *testing.T) []byte {
	t.Helper()
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		t.Fatal(err)
	}
	return k
}

// startGossip starts a server's gossip with the keyring of dir (seeded with
// key when dir has none; no encryption when both are absent), joined to
// join.
func startGossip(t *testing.T, id, dir string, key []byte, join ...string) *Gossip {
	t.Helper()
	kr, err := LoadKeyring(dir, key)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Config{
		Addr:          harness.FreeAddr(t),
		Join:          join,
		Self:          MemberMeta{Role: "server", ID: id, Bootstrapped: true, ClusterName: "tenure"},
		Log:           hclog.NewNullLogger(),
		Raft:          noRaft{},
		Leading:       func() bool { return false },
		Changed:       make(chan struct{}, 1),
		Keyring:       kr,
		DataDir:       dir,
		Prove:         ClusterNameProof("tenure"),
		Transport:     netTransport,
		MemberlistLog: hclog.NewNullLogger().StandardLogger(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Shutdown)
	return g
}

// netTransport is memberlist's own transport, without the node's caps.
func netTransport(host string, port int, mc *memberlist.Config) (Transport, error) {
	return memberlist.NewNetTransport(&memberlist.NetTransportConfig{BindAddrs: []string{host}, BindPort: port, Logger: mc.Logger})
}

func (g *Gossip) addr() string {
	return fmt.Sprintf("%s:%d", g.list.LocalNode().Addr, g.list.LocalNode().Port)
}

// sees reports whether g lists member id as alive with the key
// fingerprints want, primary first (any keys when want is nil).
func (g *Gossip) sees(id string, want []string) error {
	for _, m := range g.Members() {
		if m.Name != id {
			continue
		}
		if m.Status != "alive" {
			return fmt.Errorf("%s sees %s %s", g.cfg.Self.ID, id, m.Status)
		}
		if want != nil && fmt.Sprint(m.Meta.Keys) != fmt.Sprint(want) {
			return fmt.Errorf("%s sees %s with keys %v, want %v", g.cfg.Self.ID, id, m.Meta.Keys, want)
		}
		return nil
	}
	return fmt.Errorf("%s does not see %s", g.cfg.Self.ID, id)
}

// Members with the cluster's gossip key see each other; a member with
// another key, or with none, never joins.
func TestGossipEncryptionKeepsStrangersOut(t *testing.T) {
	key, other := newKey(t), newKey(t)
	a := startGossip(t, "a", t.TempDir(), key)
	b := startGossip(t, "b", t.TempDir(), key, a.addr())
	harness.WaitFor(t, 10*time.Second, func() error { return a.sees("b", []string{wire.KeyFingerprint(key)}) })

	for _, tc := range []struct {
		name string
		key  []byte
	}{{"another key", other}, {"no key", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			kr, _ := LoadKeyring(t.TempDir(), tc.key)
			mc := memberlist.DefaultLANConfig()
			mc.Name, mc.BindAddr, mc.BindPort = "stranger", "127.0.0.1", 0
			mc.Logger = hclog.NewNullLogger().StandardLogger(nil)
			if kr != nil {
				mc.Keyring = kr
			}
			stranger, err := memberlist.Create(mc)
			if err != nil {
				t.Fatal(err)
			}
			defer stranger.Shutdown()
			if n, err := stranger.Join([]string{a.addr()}); n > 0 {
				t.Fatalf("a stranger with %s joined %d member(s) (err %v)", tc.name, n, err)
			}
			harness.Holds(t, time.Second, func() error {
				if err := b.sees("stranger", nil); err == nil {
					return fmt.Errorf("b lists the stranger with %s", tc.name)
				}
				return nil
			})
		})
	}
}

// A key is rotated without downtime: installed everywhere, used, and the
// old one removed; the members never lose each other, the new keyring is
// saved in every data dir, and afterwards only the new key lets a member in.
func TestGossipKeyRotation(t *testing.T) {
	oldKey, newK := newKey(t), newKey(t)
	dirB := t.TempDir()
	a := startGossip(t, "a", t.TempDir(), oldKey)
	b := startGossip(t, "b", dirB, oldKey, a.addr())
	oldFP, newFP := wire.KeyFingerprint(oldKey), wire.KeyFingerprint(newK)
	harness.WaitFor(t, 10*time.Second, func() error { return a.sees("b", []string{oldFP}) })

	for _, step := range []struct {
		op   string
		want []string
	}{
		{wire.KeyringInstall, []string{oldFP, newFP}},
		{wire.KeyringUse, []string{newFP, oldFP}},
		{wire.KeyringRemove, nil},
	} {
		key := newK
		if step.op == wire.KeyringRemove {
			key, step.want = oldKey, []string{newFP}
		}
		// Each server applies the step, as the API makes each do.
		for _, g := range []*Gossip{a, b} {
			if err := g.applyKeyring(KeyringMessage{Op: step.op, Key: base64.StdEncoding.EncodeToString(key)}); err != nil {
				t.Fatalf("%s on %s: %v", step.op, g.cfg.Self.ID, err)
			}
		}
		harness.WaitFor(t, 10*time.Second, func() error {
			if err := a.sees("b", step.want); err != nil {
				return err
			}
			return b.sees("a", step.want)
		})
	}

	saved, err := LoadKeyring(dirB, oldKey) // the saved keyring wins over the seed
	if err != nil {
		t.Fatal(err)
	}
	if got := keyFingerprints(saved); fmt.Sprint(got) != fmt.Sprint([]string{newFP}) {
		t.Errorf("b's saved keyring has %v, want only the new key %s", got, newFP)
	}
	startGossip(t, "c", t.TempDir(), newK, b.addr())
	harness.WaitFor(t, 10*time.Second, func() error { return a.sees("c", []string{newFP}) })
}

// A server takes no keyring change from gossip: any member holding the
// key (a worker) could send one.
func TestServerIgnoresKeyringMessagesOverGossip(t *testing.T) {
	key, other := newKey(t), newKey(t)
	a := startGossip(t, "a", t.TempDir(), key)
	for _, op := range []string{wire.KeyringInstall, wire.KeyringUse} {
		msg, _ := json.Marshal(KeyringMessage{Op: op, Key: base64.StdEncoding.EncodeToString(other)})
		a.NotifyMsg(append([]byte{msgKeyring}, msg...))
	}
	harness.Holds(t, time.Second, func() error {
		if got := keyFingerprints(a.cfg.Keyring); fmt.Sprint(got) != fmt.Sprint([]string{wire.KeyFingerprint(key)}) {
			return fmt.Errorf("keyring now %v: a gossip message changed it", got)
		}
		return nil
	})
}

// Keyring operations that would cut members off are refused.
func TestKeyringOpRefusals(t *testing.T) {
	key, other := newKey(t), newKey(t)
	kr, err := memberlist.NewKeyring(nil, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		op   KeyringMessage
	}{
		{"use a key not installed", KeyringMessage{Op: wire.KeyringUse, Key: base64.StdEncoding.EncodeToString(other)}},
		{"remove the primary key", KeyringMessage{Op: wire.KeyringRemove, Key: base64.StdEncoding.EncodeToString(key)}},
		{"a key of 16 bytes", KeyringMessage{Op: wire.KeyringInstall, Key: base64.StdEncoding.EncodeToString(key[:16])}},
		{"not base64", KeyringMessage{Op: wire.KeyringInstall, Key: "%%%"}},
		{"unknown op", KeyringMessage{Op: "rotate", Key: base64.StdEncoding.EncodeToString(other)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := applyKeyringOp(kr, tc.op); err == nil {
				t.Fatal("applied, want a refusal")
			}
			if got := keyFingerprints(kr); fmt.Sprint(got) != fmt.Sprint([]string{wire.KeyFingerprint(key)}) {
				t.Errorf("keyring now %v, want it unchanged", got)
			}
		})
	}
}

// A damaged keyring file stops the server with a message that says what to
// do, rather than starting it in plain text.
func TestDamagedKeyringFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadKeyring(dir, newKey(t)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, keyringFileName), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := LoadKeyring(dir, nil)
	if err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("got %v, want the damaged keyring named", err)
	}
}
