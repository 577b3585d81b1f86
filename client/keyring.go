package client

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/hashicorp/memberlist"
	"github.com/tenure-io/tenure/client/wire"
)

// EnvGossipKey names the environment variable that a Worker reads its
// gossip keys from when WithGossipKeys is not given: base64 keys separated
// by commas, the primary first.
const EnvGossipKey = "TENURE_GOSSIP_KEY"

// ParseGossipKeys decodes base64 gossip keys separated by commas, the
// primary first. Each must be 32 bytes.
func ParseGossipKeys(s string) ([][]byte, error) {
	var keys [][]byte
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, err := base64.StdEncoding.DecodeString(part)
		if err != nil {
			return nil, fmt.Errorf("%w: gossip key: not base64: %v", ErrInvalid, err)
		}
		if len(k) != 32 {
			return nil, fmt.Errorf("%w: gossip key: %d bytes, want 32", ErrInvalid, len(k))
		}
		keys = append(keys, k)
	}
	return keys, nil
}

// Keyring lists the gossip keys that the members alive in the answering
// server's view hold.
func (o *OperatorAPI) Keyring(ctx context.Context) (*Keyring, *Meta, error) {
	return o.keyring(ctx, &request{method: http.MethodGet, path: "/v1/operator/keyring"})
}

// ChangeKeyring installs, uses (as primary) or removes a gossip key on the
// answering server, which sends the change to every member; Unreached of
// the answer names those it could not reach. Rotate a key in three calls,
// waiting between them until Keyring shows every member has followed:
// install the new key, use it, remove the old one. The server refuses a use
// of a key that an alive member lacks and a remove of a key that an alive
// member still encrypts with, unless force. Each call is idempotent, so it
// is retried like lease calls.
func (o *OperatorAPI) ChangeKeyring(ctx context.Context, op string, key []byte, force bool) (*Keyring, *Meta, error) {
	body := wire.KeyringBody{Op: op, GossipKey: base64.StdEncoding.EncodeToString(key), Force: force}
	return o.keyring(ctx, &request{method: http.MethodPost, path: "/v1/operator/keyring", body: body})
}

func (o *OperatorAPI) keyring(ctx context.Context, r *request) (*Keyring, *Meta, error) {
	resp, err := o.c.do(ctx, r)
	if err != nil {
		return nil, nil, err
	}
	var out Keyring
	if err := json.Unmarshal(resp.body, &out); err != nil {
		return nil, nil, fmt.Errorf("decode keyring: %w", err)
	}
	return &out, resp.meta, nil
}

// WithGossipKeys sets the worker's gossip keys, the primary first: the
// cluster's servers refuse a worker without a key of theirs once gossip
// encryption is on. The default reads EnvGossipKey. A worker follows the
// keyring changes that servers send it while it runs; after a rotation,
// give it the new key for its next start.
func WithGossipKeys(keys ...[]byte) WorkerOption {
	return func(c *workerConfig) { c.gossipKeys, c.gossipKeysSet = keys, true }
}

// workerKeyring builds the keyring of a worker's gossip; nil without keys.
func workerKeyring(cfg workerConfig) (*memberlist.Keyring, error) {
	keys := cfg.gossipKeys
	if !cfg.gossipKeysSet {
		var err error
		if keys, err = ParseGossipKeys(os.Getenv(EnvGossipKey)); err != nil {
			return nil, fmt.Errorf("%s: %w", EnvGossipKey, err)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	return memberlist.NewKeyring(keys[1:], keys[0])
}

// keyFingerprints are the fingerprints of kr's keys, primary first.
func keyFingerprints(kr *memberlist.Keyring) []string {
	primary := kr.GetPrimaryKey()
	out := []string{KeyFingerprint(primary)}
	for _, k := range kr.GetKeys() {
		if !bytes.Equal(k, primary) {
			out = append(out, KeyFingerprint(k))
		}
	}
	return out
}

// applyKeyringMessage changes kr as a server's message says.
func applyKeyringMessage(kr *memberlist.Keyring, m wire.KeyringMessage) error {
	key, err := base64.StdEncoding.DecodeString(m.Key)
	if err != nil {
		return fmt.Errorf("gossip key: not base64: %w", err)
	}
	switch m.Op {
	case KeyringInstall:
		return kr.AddKey(key)
	case KeyringUse:
		return kr.UseKey(key)
	case KeyringRemove:
		return kr.RemoveKey(key)
	}
	return fmt.Errorf("keyring op %q is not install, use or remove", m.Op)
}
