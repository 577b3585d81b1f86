package client

import (
	"context"
	"encoding/base64"
	"net/http"

	"github.com/tenure-io/tenure/client/wire"
)

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
	return call[Keyring](ctx, o.c, r, "keyring")
}
