package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
)

const leasesUsage = `Usage: tenure leases <subcommand> [args]

Subcommands:
    list [-prefix P] [-state held|free] [-holder H] [-stale]
    get KEY [-stale]
    acquire KEY -holder H -ttl D [-wait D] [-meta k=v ...] [-secret S]
                        prints the lease's secret; again by the holder of
                        KEY with that secret: restarts its deadline, and
                        -meta replaces its metadata
    renew KEY -holder H -token N -secret S
    release KEY -holder H -token N -secret S
                        -secret defaults to $TENURE_LEASE_SECRET; a lease
                        acquired elsewhere has a secret only its acquirer
                        knows: end it with revoke instead
    revoke KEY [-force]       end the lease: the key frees when the holder's
                              deadline passes (-force: at once; fencing only)
    revoke -holder H [-force] end every lease of H
    stale [-threshold D] [-all] [-json]
                              unowned keys, stuck workers, groups below
                              min_workers, leases not renewed, disabled and
                              prohibited keys (20 of each, -all: every one),
                              then a summary by cause; exits 1 when something
                              is wrong, 2 when it cannot ask
`

func (e *env) leasesList(ctx context.Context, args []string) int {
	var opts client.ListOptions
	var state string
	var stale bool
	fs, cf := e.clusterFlagSet("leases list", "leases list [-prefix P] [-state held|free] [-holder H] [-stale]")
	fs.StringVar(&opts.Prefix, "prefix", "", "only keys that start with this prefix")
	fs.StringVar(&state, "state", "", "only leases in this state: held or free")
	fs.StringVar(&opts.Holder, "holder", "", "only leases of this holder")
	fs.BoolVar(&stale, "stale", false, "let any server answer from its local state")
	if _, code, ok := e.parse(fs, args, 0, 0); !ok {
		return code
	}
	switch client.LeaseState(state) {
	case "", client.StateHeld, client.StateFree:
		opts.State = client.LeaseState(state)
	default:
		return e.usageError(fs, fmt.Sprintf("-state must be held or free, got %q", state))
	}
	c, err := client.New(cf.config())
	if err != nil {
		return e.fail(err)
	}
	leases, meta, err := c.Leases().List(ctx, &opts, &client.QueryOptions{Stale: stale})
	if err != nil {
		return e.fail(err)
	}
	if leases == nil {
		leases = []client.LeaseInfo{}
	}
	return e.show(cf.json, wire.LeaseList{Leases: leases, Index: meta.Index}, nil, func() {
		if len(leases) == 0 {
			fmt.Fprintln(e.stdout, "no leases")
			return
		}
		e.printTable([]any{"KEY", "STATE", "HOLDER", "TOKEN", "TTL", "EXPIRES IN", "REASON", "INDEX"}, len(leases), func(i int) []any {
			l := &leases[i]
			return []any{l.Key, l.State, l.Holder, l.Token, l.TTL, expiresIn(l), dash(l.Reason), l.ModifyIndex}
		})
	})
}

func (e *env) leasesGet(ctx context.Context, args []string) int {
	var stale bool
	fs, cf := e.clusterFlagSet("leases get", "leases get KEY [-stale]")
	fs.BoolVar(&stale, "stale", false, "let any server answer from its local state")
	return e.answer(fs, cf, args, 1, 1, func(c *client.Client, pos []string) (any, func(), error) {
		l, _, err := c.Leases().Get(ctx, pos[0], &client.QueryOptions{Stale: stale})
		return l, func() { e.printLease("", l) }, err
	})
}

// envLeaseSecret names the environment variable that the -secret flag of
// leases acquire, renew and release defaults to: a secret on the command
// line is visible to every user of the machine (ps).
const envLeaseSecret = "TENURE_LEASE_SECRET"

func (e *env) leasesAcquire(ctx context.Context, args []string) int {
	var req client.AcquireRequest
	meta := metaFlag{}
	fs, cf := e.clusterFlagSet("leases acquire", "leases acquire KEY -holder H -ttl D [-wait D] [-meta k=v ...] [-secret S]")
	fs.StringVar(&req.Holder, "holder", "", "holder identity (default: hostname-pid-random, printed)")
	fs.StringVar(&req.Secret, "secret", os.Getenv(envLeaseSecret),
		"lease secret, 32 to 128 characters of [A-Za-z0-9_-] (default $"+envLeaseSecret+", else a new one, printed); renew and release need it")
	fs.DurationVar(&req.TTL, "ttl", 10*time.Second, "lifetime of the lease")
	fs.DurationVar(&req.Wait, "wait", 0, "queue behind the current holder for up to this long")
	fs.Var(meta, "meta", "metadata entry key=value (repeatable)")
	return e.answer(fs, cf, args, 1, 1, func(c *client.Client, pos []string) (any, func(), error) {
		if req.Holder == "" {
			req.Holder = client.NewHolderID()
		}
		if len(meta) > 0 {
			req.Metadata = meta
		}
		l, m, err := c.Leases().Acquire(ctx, pos[0], req)
		return l, func() {
			title := "Acquired " + l.Key
			switch {
			case !m.Created && req.Metadata != nil:
				title = "Already held by this holder: " + l.Key + " (deadline restarted, metadata replaced)"
			case !m.Created:
				title = "Already held by this holder: " + l.Key + " (deadline restarted)"
			}
			e.printLease(title, l)
		}, err
	})
}

// leaseFlags are the flags of renew and release, which name one lease.
type leaseFlags struct {
	cluster clusterFlags
	holder  string
	token   uint64
	secret  string
	fs      *flag.FlagSet
}

func (e *env) newLeaseFlags(name string) *leaseFlags {
	f := &leaseFlags{fs: e.newFlagSet("leases "+name, "leases "+name+" KEY -holder H -token N -secret S")}
	// -token is the fencing token here, defined first: the ACL token is
	// -acl-token (or the environment) on these commands.
	f.fs.Uint64Var(&f.token, "token", 0, "fencing token of the lease (required)")
	f.cluster.register(f.fs)
	f.fs.StringVar(&f.holder, "holder", "", "holder of the lease (required)")
	f.fs.StringVar(&f.secret, "secret", os.Getenv(envLeaseSecret),
		"the lease's secret, as its acquire printed it (required; default $"+envLeaseSecret+")")
	return f
}

// connect parses args and returns the key and a client; when ok is false,
// code is the exit code of the command.
func (f *leaseFlags) connect(e *env, args []string) (key string, c *client.Client, code int, ok bool) {
	pos, code, ok := e.parse(f.fs, args, 1, 1)
	if !ok {
		return "", nil, code, false
	}
	if f.holder == "" || f.token == 0 {
		return "", nil, e.usageError(f.fs, "-holder and -token are required"), false
	}
	if f.secret == "" {
		return "", nil, e.usageError(f.fs, "-secret is required: the secret that the lease's acquire printed (or $"+envLeaseSecret+"); "+
			"a holder's name and token are not enough. To end a lease acquired by someone else, use: tenure leases revoke KEY"), false
	}
	c, err := client.New(f.cluster.config())
	if err != nil {
		return "", nil, e.fail(err), false
	}
	return pos[0], c, exitOK, true
}

func (e *env) leasesRenew(ctx context.Context, args []string) int {
	f := e.newLeaseFlags("renew")
	key, c, code, ok := f.connect(e, args)
	if !ok {
		return code
	}
	l, _, err := c.Leases().WithSecret(f.secret).Renew(ctx, key, f.holder, f.token)
	return e.show(f.cluster.json, l, err, func() { e.printLease("Renewed "+l.Key, l) })
}

func (e *env) leasesRelease(ctx context.Context, args []string) int {
	f := e.newLeaseFlags("release")
	key, c, code, ok := f.connect(e, args)
	if !ok {
		return code
	}
	// A holder and token that never were the key's lease fail with
	// not_holder (and a non-zero exit); a lease that ended already is not
	// an error, but is not "Released" either.
	m, err := c.Leases().WithSecret(f.secret).Release(ctx, key, f.holder, f.token)
	if err != nil {
		return e.fail(err)
	}
	return e.show(f.cluster.json, map[string]any{"key": key, "token": f.token, "released": !m.AlreadyGone, "already_gone": m.AlreadyGone}, nil, func() {
		if m.AlreadyGone {
			// Tokens are the cluster's, not the key's: an older token than
			// the key's current one is of a lease that ended, or of another
			// key's lease; the server keeps no history to tell which.
			fmt.Fprintf(e.stdout, "Nothing to release: %s has no lease with token %d now (that lease ended already, or the token was never this key's); the key is free or has a newer lease\n", key, f.token)
			return
		}
		fmt.Fprintf(e.stdout, "Released %s (token %d)\n", key, f.token)
	})
}

func (e *env) leasesRevoke(ctx context.Context, args []string) int {
	var holder string
	var force bool
	fs, cf := e.clusterFlagSet("leases revoke", "leases revoke KEY [-force] | leases revoke -holder H [-force]")
	fs.StringVar(&holder, "holder", "", "end every lease of this holder instead of one key")
	fs.BoolVar(&force, "force", false, "free at once, for a holder known to be dead: exclusion then rests on fencing alone")
	n, byHolder := 1, hasFlag(args, "holder")
	if byHolder {
		n = 0
	}
	return e.answer(fs, cf, args, n, n, func(c *client.Client, pos []string) (any, func(), error) {
		if byHolder && holder == "" {
			return nil, nil, badUsage("-holder: must not be empty")
		}
		var opts []client.OperatorOption
		if force {
			opts = append(opts, client.WithForce())
		}
		var ended []client.RevokedLease
		var err error
		if byHolder {
			ended, _, err = c.Leases().RevokeHolder(ctx, holder, opts...)
		} else {
			ended, _, err = c.Leases().RevokeKey(ctx, pos[0], opts...)
		}
		return client.RevokeResult{Revoked: ended}, func() {
			if len(ended) == 0 {
				fmt.Fprintln(e.stdout, "Nothing to revoke: no lease held")
			}
			e.printEnded("Revoked", ended)
		}, err
	})
}

// printEnded prints the leases a revoke, disable or prohibit ended.
func (e *env) printEnded(verb string, ended []client.RevokedLease) {
	for _, l := range ended {
		who := fmt.Sprintf("holder %s, token %d", l.Holder, l.Token)
		if l.Holder == "" {
			who = "holder and token not shown: the token has no read on the key"
		}
		if l.Forced {
			fmt.Fprintf(e.stdout, "%s %s (%s): freed now (forced; only fencing stops the old holder)\n", verb, l.Key, who)
			continue
		}
		fmt.Fprintf(e.stdout, "%s %s (%s): renewals refused (%s), frees in %v\n", verb, l.Key, who, l.Reason, l.FreesIn.Round(time.Millisecond))
	}
}

// hasFlag reports whether args set the flag name (-name or --name, with or
// without =value).
func hasFlag(args []string, name string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if a == name || strings.HasPrefix(a, name+"=") {
			return true
		}
	}
	return false
}

// printLease prints one lease: a title line, unless empty, and aligned
// fields.
func (e *env) printLease(title string, l *client.LeaseInfo) {
	if title != "" {
		fmt.Fprintln(e.stdout, title)
	}
	w := e.table()
	field := func(name string, v any) { row(w, name+":", v) }
	field("Key", l.Key)
	field("State", l.State)
	field("Holder", l.Holder)
	field("Token", l.Token)
	field("TTL", l.TTL)
	field("Expires in", expiresIn(l))
	if l.Reason != "" {
		field("Reason", l.Reason)
	}
	if l.Ending != "" {
		field("Ending", l.Ending+" (renewals refused; frees when it expires)")
	}
	field("Acquired at", timeOrDash(l.AcquiredAt))
	field("Renewed at", timeOrDash(l.RenewedAt))
	if len(l.Metadata) > 0 {
		field("Metadata", pairs(l.Metadata))
	}
	field("Modify index", l.ModifyIndex)
	if l.Secret != "" { // an acquire's answer
		field("Secret", l.Secret+" (renew and release need it: -secret or $"+envLeaseSecret+")")
	}
	w.Flush()
}

func expiresIn(l *client.LeaseInfo) string {
	if !l.HasExpiresIn {
		return "-"
	}
	return l.ExpiresIn.String()
}

func timeOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.RFC3339Nano)
}

func dash(s string) string { return cmp.Or(s, "-") }
