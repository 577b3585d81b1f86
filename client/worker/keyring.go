package worker

import (
	"encoding/base64"
	"fmt"
	"os"
	"strings"

	"github.com/hashicorp/memberlist"
	"github.com/tenure-io/tenure/client"
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
			return nil, fmt.Errorf("%w: gossip key: not base64: %v", client.ErrInvalid, err)
		}
		if len(k) != 32 {
			return nil, fmt.Errorf("%w: gossip key: %d bytes, want 32", client.ErrInvalid, len(k))
		}
		keys = append(keys, k)
	}
	return keys, nil
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
	return wire.KeyFingerprints(kr.GetPrimaryKey(), kr.GetKeys())
}

// applyKeyringMessage changes kr as a server's message says.
func applyKeyringMessage(kr *memberlist.Keyring, m wire.KeyringMessage) error {
	key, err := base64.StdEncoding.DecodeString(m.Key)
	if err != nil {
		return fmt.Errorf("gossip key: not base64: %w", err)
	}
	switch m.Op {
	case wire.KeyringInstall:
		return kr.AddKey(key)
	case wire.KeyringUse:
		return kr.UseKey(key)
	case wire.KeyringRemove:
		return kr.RemoveKey(key)
	}
	return fmt.Errorf("keyring op %q is not install, use or remove", m.Op)
}
