package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/worker"
)

// keygen prints a new random gossip key.
func (e *env) keygen(_ context.Context, args []string) int {
	fs := e.newFlagSet("keygen", "keygen")
	if _, code, ok := e.parse(fs, args, 0, 0); !ok {
		return code
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return e.fail(err)
	}
	fmt.Fprintln(e.stdout, base64.StdEncoding.EncodeToString(key))
	return exitOK
}

const keyringUsage = `Usage: tenure operator keyring <subcommand> [args]

Subcommands:
    list          The gossip keys of the members: fingerprint, holders, primary users
    install KEY   Add KEY to every member's keyring
    use KEY       Encrypt with KEY (installed everywhere first)
    remove KEY    Remove KEY (not the primary one)

Rotate a key without downtime: install the new one, use it, remove the old
one. Each step waits (-wait, default 30s) until every member alive in the
answering server's view has followed, and fails if some have not.
`

func (e *env) keyringList(ctx context.Context, args []string) int {
	return e.query("operator keyring list", "operator keyring list", args, 0, 0, func(c *client.Client, _ []string) (any, func(), error) {
		kr, _, err := c.Operator().Keyring(ctx)
		return kr, func() { e.printKeyring(kr) }, err
	})
}

func (e *env) keyringChange(ctx context.Context, args []string, op string) int {
	fs, cf := e.clusterFlagSet("operator keyring "+op, "operator keyring "+op+" KEY [-wait D] [-force]")
	wait := fs.Duration("wait", 30*time.Second, "how long to wait for every member to follow (0: do not wait)")
	force := fs.Bool("force", false, "use a key some member lacks, or remove one some member encrypts with (cuts it off)")
	c, pos, code, ok := e.connect(fs, cf, args, 1, 1)
	if !ok {
		return code
	}
	keys, err := worker.ParseGossipKeys(pos[0])
	if err != nil || len(keys) != 1 {
		return e.usageError(fs, fmt.Sprintf("KEY: want one base64 key of 32 bytes (tenure keygen makes one): %v", err))
	}
	kr, _, err := c.Operator().ChangeKeyring(ctx, op, keys[0], *force)
	if err != nil {
		return e.fail(err)
	}
	fp := client.KeyFingerprint(keys[0])
	deadline := time.Now().Add(*wait)
	for *wait > 0 && !followed(kr, op, fp) && time.Now().Before(deadline) {
		fmt.Fprintf(e.stderr, "waiting for every member to %s %s: %s\n", op, fp, progress(kr, fp))
		select {
		case <-ctx.Done():
			return e.fail(ctx.Err())
		case <-time.After(time.Second):
		}
		if kr, _, err = c.Operator().Keyring(ctx); err != nil {
			return e.fail(err)
		}
	}
	if code := e.show(cf.json, kr, nil, func() { e.printKeyring(kr) }); code != exitOK {
		return code
	}
	if *wait > 0 && !followed(kr, op, fp) {
		return e.fail(fmt.Errorf("after %v not every member has followed (%s): run it again once they are reachable", *wait, progress(kr, fp)))
	}
	return exitOK
}

// followed reports whether every member listed in kr has applied op to
// the key fp.
func followed(kr *client.Keyring, op, fp string) bool {
	for _, k := range kr.Keys {
		if k.Fingerprint != fp {
			continue
		}
		switch op {
		case client.KeyringInstall:
			return k.Holders == kr.Members
		case client.KeyringUse:
			return k.Primary == kr.Members
		}
		return k.Holders == 0
	}
	return op == client.KeyringRemove
}

func progress(kr *client.Keyring, fp string) string {
	for _, k := range kr.Keys {
		if k.Fingerprint == fp {
			return fmt.Sprintf("%d of %d members hold it, %d use it", k.Holders, kr.Members, k.Primary)
		}
	}
	return fmt.Sprintf("0 of %d members hold it", kr.Members)
}

func (e *env) printKeyring(kr *client.Keyring) {
	e.printTable([]any{"FINGERPRINT", "HOLDERS", "PRIMARY", "KEY"}, len(kr.Keys), func(i int) []any {
		k := kr.Keys[i]
		return []any{k.Fingerprint, fmt.Sprintf("%d/%d", k.Holders, kr.Members), k.Primary, dash(k.GossipKey)}
	})
	if len(kr.Unreached) > 0 {
		fmt.Fprintf(e.stderr, "not reached: %v\n", kr.Unreached)
	}
}
