package worker

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
)

func TestParseGossipKeys(t *testing.T) {
	k1 := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("a", 32)))
	k2 := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("b", 32)))
	short := base64.StdEncoding.EncodeToString([]byte("short"))
	for _, tc := range []struct {
		name    string
		in      string
		want    int // keys
		wantErr bool
	}{
		{"empty", "", 0, false},
		{"one", k1, 1, false},
		{"two, primary first, spaces", k1 + " , " + k2, 2, false},
		{"not base64", "%%%", 0, true},
		{"too short", short, 0, true},
		{"one bad among good", k1 + "," + short, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keys, err := ParseGossipKeys(tc.in)
			if tc.wantErr {
				if !errors.Is(err, client.ErrInvalid) {
					t.Fatalf("got %v, want an client.ErrInvalid", err)
				}
				return
			}
			if err != nil || len(keys) != tc.want {
				t.Fatalf("got %d keys, err %v; want %d", len(keys), err, tc.want)
			}
		})
	}
}

// A worker's keyring comes from WithGossipKeys, else from TENURE_GOSSIP_KEY;
// the first key is the primary; a bad variable is an error, not plain text.
func TestWorkerKeyring(t *testing.T) {
	k1, k2 := []byte(strings.Repeat("a", 32)), []byte(strings.Repeat("b", 32))
	env := base64.StdEncoding.EncodeToString(k2) + "," + base64.StdEncoding.EncodeToString(k1)
	t.Setenv(EnvGossipKey, env)
	kr, err := workerKeyring(workerConfig{})
	if err != nil || kr == nil || wire.KeyFingerprint(kr.GetPrimaryKey()) != wire.KeyFingerprint(k2) || len(kr.GetKeys()) != 2 {
		t.Fatalf("from the environment: got %v, %v; want k2 primary of two keys", kr, err)
	}
	kr, err = workerKeyring(workerConfig{gossipKeys: [][]byte{k1}, gossipKeysSet: true})
	if err != nil || wire.KeyFingerprint(kr.GetPrimaryKey()) != wire.KeyFingerprint(k1) || len(kr.GetKeys()) != 1 {
		t.Fatalf("from the option: got %v, %v; want k1 alone", kr, err)
	}
	t.Setenv(EnvGossipKey, "")
	if kr, err := workerKeyring(workerConfig{}); kr != nil || err != nil {
		t.Fatalf("without keys: got %v, %v; want plain text", kr, err)
	}
	t.Setenv(EnvGossipKey, "not-a-key")
	if _, err := workerKeyring(workerConfig{}); err == nil || !strings.Contains(err.Error(), EnvGossipKey) {
		t.Fatalf("a bad variable: got %v, want an error naming %s", err, EnvGossipKey)
	}
}
