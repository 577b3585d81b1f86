package membership

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/hashicorp/memberlist"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster/internal/check"
	"github.com/tenure-io/tenure/cluster/internal/identity"
)

// Gossip encryption. memberlist encrypts every gossip packet with the
// primary key of its keyring and accepts packets under any installed key,
// so a key is rotated without downtime in three steps, each reaching every
// member (servers and workers): install the new key, use it as primary,
// remove the old one. A server keeps its keyring in its data dir, so a
// rotation survives restarts; the -gossip-key flag only seeds a data dir
// that has no keyring yet.

// keyringFileName is the keyring's file in the data dir.
const keyringFileName = "gossip-keyring.json"

// msgKeyring is the type byte of a keyring operation sent over gossip to a
// member (a server or a worker).
const msgKeyring byte = 'K'

// KeyringMessage is a keyring operation as it travels over gossip, after
// the type byte msgKeyring; workers decode it too.
type KeyringMessage = wire.KeyringMessage

// KeyringView is one key as the members announce it.
type KeyringView struct {
	// Fingerprint names the key without revealing it.
	Fingerprint string
	// Key is the key, base64, when this server holds it.
	Key string
	// Holders hold the key; Primary of them encrypt with it.
	Holders, Primary int
}

// ParseGossipKey decodes a base64 gossip key and checks its length.
func ParseGossipKey(s string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("not base64: %w", err)
	}
	if err := memberlist.ValidateKey(key); err != nil {
		return nil, err
	}
	if len(key) != 32 {
		return nil, fmt.Errorf("%d bytes, want 32 (make one with tenure keygen)", len(key))
	}
	return key, nil
}

// ErrPlaintext: gossip runs without encryption, so there is no keyring.
var ErrPlaintext = errors.New("gossip runs without encryption")

// keyringFile is the keyring on disk: every key, base64, primary first.
type keyringFile struct {
	Keys []string `json:"keys"`
}

// LoadKeyring returns the keyring of dataDir, seeding it with seed when the
// data dir has none. It returns nil, nil when there is neither: gossip then
// runs without encryption.
func LoadKeyring(dataDir string, seed []byte) (*memberlist.Keyring, error) {
	path := filepath.Join(dataDir, keyringFileName)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if seed == nil {
			return nil, nil
		}
		kr, err := memberlist.NewKeyring(nil, seed)
		if err != nil {
			return nil, fmt.Errorf("gossip-key: %w", err)
		}
		return kr, saveKeyring(dataDir, kr)
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var f keyringFile
	if err := json.Unmarshal(b, &f); err != nil || len(f.Keys) == 0 {
		return nil, fmt.Errorf("%s is damaged (%v): restore it, or remove it to start again from -gossip-key", path, err)
	}
	keys := make([][]byte, len(f.Keys))
	for i, s := range f.Keys {
		if keys[i], err = ParseGossipKey(s); err != nil {
			return nil, fmt.Errorf("%s: key %d: %w", path, i, err)
		}
	}
	return memberlist.NewKeyring(keys[1:], keys[0])
}

// saveKeyring writes kr to dataDir atomically.
func saveKeyring(dataDir string, kr *memberlist.Keyring) error {
	primary := kr.GetPrimaryKey()
	f := keyringFile{Keys: []string{base64.StdEncoding.EncodeToString(primary)}}
	for _, k := range kr.GetKeys() {
		if !bytes.Equal(k, primary) {
			f.Keys = append(f.Keys, base64.StdEncoding.EncodeToString(k))
		}
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := identity.WriteFileDurably(filepath.Join(dataDir, keyringFileName), b, 0o600); err != nil {
		return fmt.Errorf("write keyring: %w", err)
	}
	return nil
}

// keyFingerprints are the fingerprints of kr's keys, primary first: what a
// member announces, so that operators see how far a rotation has spread.
func keyFingerprints(kr *memberlist.Keyring) []string {
	return wire.KeyFingerprints(kr.GetPrimaryKey(), kr.GetKeys())
}

// applyKeyringOp changes kr as op says.
func applyKeyringOp(kr *memberlist.Keyring, op KeyringMessage) error {
	key, err := ParseGossipKey(op.Key)
	if err != nil {
		return &check.InvalidError{Field: "gossip_key", Err: err}
	}
	switch op.Op {
	case wire.KeyringInstall:
		return kr.AddKey(key)
	case wire.KeyringUse:
		for _, k := range kr.GetKeys() {
			if bytes.Equal(k, key) {
				return kr.UseKey(key)
			}
		}
		return check.Invalid("gossip_key", "key %s is not installed here: install it first", wire.KeyFingerprint(key))
	case wire.KeyringRemove:
		if bytes.Equal(kr.GetPrimaryKey(), key) {
			return check.Invalid("gossip_key", "key %s is the primary key: use another key first", wire.KeyFingerprint(key))
		}
		return kr.RemoveKey(key)
	}
	return check.Invalid("op", "%q is not install, use or remove", op.Op)
}

// ChangeKeyring applies op to this server's keyring, saves it and
// announces the new fingerprints (applyKeyring), and logs the change.
// ErrPlaintext: gossip runs without encryption. A *check.InvalidError: op
// is not a valid change of this keyring.
func (g *Gossip) ChangeKeyring(op KeyringMessage) error {
	if g.cfg.Keyring == nil {
		return ErrPlaintext
	}
	if err := g.applyKeyring(op); err != nil {
		return err
	}
	g.cfg.Log.Info("gossip_keyring_changed", "op", op.Op, "fingerprint", keyFingerprintOf(op.Key))
	return nil
}

// SendToWorkers sends op over gossip to every worker alive in this
// server's view and returns the names of those it could not reach.
// ErrPlaintext: gossip runs without encryption.
func (g *Gossip) SendToWorkers(ctx context.Context, op KeyringMessage) ([]string, error) {
	if g.cfg.Keyring == nil {
		return nil, ErrPlaintext
	}
	msg, err := json.Marshal(op)
	if err != nil {
		return nil, err
	}
	msg = append([]byte{msgKeyring}, msg...)
	workers := map[string]bool{}
	for _, m := range g.Members() {
		if m.Meta.Role == "worker" && m.Status == "alive" {
			workers[m.Name] = true
		}
	}
	var failed []string
	for _, m := range g.list.Members() {
		if !workers[m.Name] {
			continue
		}
		if ctx.Err() != nil {
			failed = append(failed, m.Name)
			continue
		}
		if err := g.list.SendReliable(m, msg); err != nil {
			g.cfg.Log.Warn("sending keyring change failed", "member", m.Name, "error", err)
			failed = append(failed, m.Name)
		}
	}
	sort.Strings(failed)
	return failed, nil
}

// KeyringViews lists every key that a member alive in this server's
// view announces, with how many members hold it and use it as primary,
// and the number of those members. ErrPlaintext: gossip runs without
// encryption.
func (g *Gossip) KeyringViews() ([]KeyringView, int, error) {
	if g.cfg.Keyring == nil {
		return nil, 0, ErrPlaintext
	}
	mine := map[string]string{}
	for _, k := range g.cfg.Keyring.GetKeys() {
		mine[wire.KeyFingerprint(k)] = base64.StdEncoding.EncodeToString(k)
	}
	views := map[string]*KeyringView{}
	total := 0
	for _, m := range g.Members() {
		if m.Status != "alive" {
			continue
		}
		total++
		for i, fp := range m.Meta.Keys {
			v := views[fp]
			if v == nil {
				v = &KeyringView{Fingerprint: fp, Key: mine[fp]}
				views[fp] = v
			}
			v.Holders++
			if i == 0 {
				v.Primary++
			}
		}
	}
	out := make([]KeyringView, 0, len(views))
	for _, v := range views {
		out = append(out, *v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Fingerprint < out[j].Fingerprint })
	return out, total, nil
}

func keyFingerprintOf(b64 string) string {
	key, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return "invalid"
	}
	return wire.KeyFingerprint(key)
}

// applyKeyring changes this server's keyring, saves it, and announces the
// new fingerprints. The change is made to a copy and saved first, so the
// keyring in memory never differs from the one a restart would load.
func (g *Gossip) applyKeyring(op KeyringMessage) error {
	g.keyringMu.Lock()
	defer g.keyringMu.Unlock()
	next, err := memberlist.NewKeyring(g.cfg.Keyring.GetKeys(), g.cfg.Keyring.GetPrimaryKey())
	if err != nil {
		return err
	}
	if err := applyKeyringOp(next, op); err != nil {
		return err
	}
	if err := saveKeyring(g.cfg.DataDir, next); err != nil {
		return err
	}
	if err := applyKeyringOp(g.cfg.Keyring, op); err != nil {
		return err // cannot happen: the copy took it
	}
	g.announce(func(m *MemberMeta) { m.Keys = keyFingerprints(g.cfg.Keyring) }, "announcing keyring failed")
	return nil
}

// NotifyMsg implements memberlist.Delegate. Servers take nothing from
// gossip messages: a keyring change reaches a server only through the API.
func (g *Gossip) NotifyMsg([]byte) {}
