package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/client/worker"
	"github.com/tenure-io/tenure/cluster"
)

func (e *env) status(ctx context.Context, args []string) int {
	fs, cf := e.clusterFlagSet("status", "status [-http-addr A] [-json]")
	c, _, code, ok := e.connect(fs, cf, args, 0, 0)
	if !ok {
		return code
	}
	st, _, err := c.Status(ctx)
	if code := e.show(cf.json, st, err, func() { e.printStatus(st) }); code != exitOK {
		return code
	}
	return e.statusExit(st)
}

// printStatus prints the status of the server that answered, and its
// Raft configuration.
func (e *env) printStatus(st *client.NodeStatus) {
	w := e.table()
	field := func(name string, v any) { row(w, name+":", v) }
	field("Node", st.NodeID)
	field("Cluster id", dash(st.ClusterID))
	field("Role", st.Role)
	// Ready as GET /readyz judges it (without its quorum round on the
	// leader): the API's ready field is true only on the established
	// leader, which read "Ready: false" on every healthy follower.
	field("Ready", st.LeaderID != "" && st.NotReady == "" && (st.Role != "leader" || st.Ready))
	if st.Role == "leader" {
		field("Leadership established", st.Ready)
	}
	field("Leader", cmp.Or(st.LeaderID, "none"))
	field("Leader HTTP address", dash(st.LeaderHTTPAddr))
	field("Term", st.Term)
	field("Last log index", st.LastLogIndex)
	field("Commit index", st.CommitIndex)
	field("Applied index", st.AppliedIndex)
	if st.LastContact < 0 {
		field("Last contact", "never")
	} else {
		field("Last contact", st.LastContact)
	}
	field("Behind leader", fmt.Sprintf("%d entries (commit index %d) for %s", st.BehindEntries, st.LeaderCommitIndex, dash(st.BehindFor)))
	if st.DiskWriteErrors > 0 {
		field("Disk write errors", fmt.Sprintf("%d (last: %s)", st.DiskWriteErrors, dash(st.LastDiskError)))
	}
	if st.SnapshotWriteErrors > 0 {
		field("Snapshot write errors", fmt.Sprintf("%d (last: %s)", st.SnapshotWriteErrors, dash(st.LastSnapshotError)))
	}
	if st.NotReady != "" {
		field("Not ready", st.NotReady)
	}
	field("Failure tolerance", st.FailureTolerance)
	w.Flush()
	if len(st.Servers) > 0 {
		fmt.Fprintln(e.stdout)
		e.printTable([]any{"ID", "RAFT ADDRESS", "HTTP ADDRESS", "SUFFRAGE", "LEADER", "HEALTHY"}, len(st.Servers), func(i int) []any {
			s := st.Servers[i]
			return []any{s.ID, s.RaftAddr, s.HTTPAddr, s.Suffrage, s.Leader, s.Healthy}
		})
	}
}

// statusExit fails `tenure status` when the cluster cannot take one more
// failure although it was built to: when the server that answered knows
// no leader (the cluster serves nothing then, whatever the server's
// role), or judges that one more voter that fails stops every write, and
// a voter is not healthy or there are three or more. A cluster of one or
// two voters tolerates no failure by design (a -dev server): it passes
// while its voters are healthy.
func (e *env) statusExit(st *client.NodeStatus) int {
	if st.LeaderID == "" {
		since := "has never heard from a leader"
		if st.LastContact >= 0 {
			since = fmt.Sprintf("last heard from a leader %v ago", st.LastContact)
		}
		fmt.Fprintf(e.stderr, "error: no leader: %s (%s in term %d) %s; the cluster serves no lease until a quorum of its voters can elect one\n",
			st.NodeID, st.Role, st.Term, since)
		return exitError
	}
	var down []string
	voters := 0
	for _, s := range st.Servers {
		if s.Suffrage == "voter" {
			voters++
		}
		if !s.Healthy {
			down = append(down, s.ID)
		}
	}
	if st.FailureTolerance > 0 || voters < 3 && len(down) == 0 {
		return exitOK
	}
	fmt.Fprintf(e.stderr, "error: failure tolerance 0: one more voter that fails stops every write (as %s judges it; not healthy: %s); bring those servers back or add one (docs/operations.md)\n",
		st.NodeID, dash(strings.Join(down, ", ")))
	return exitError
}

func (e *env) members(ctx context.Context, args []string) int {
	return e.query("members", "members [-http-addr A] [-json]", args, 0, 0, func(c *client.Client, _ []string) (any, func(), error) {
		ms, _, err := c.Members(ctx)
		if ms == nil {
			ms = []client.Member{}
		}
		return wire.MemberList{Members: ms}, func() {
			e.printTable([]any{"NAME", "ADDRESS", "STATUS", "ROLE", "META"}, len(ms), func(i int) []any {
				return []any{ms[i].Name, ms[i].Addr, ms[i].Status, ms[i].Role, dash(metaPairs(ms[i].Meta))}
			})
		}, err
	})
}

// snapshotTake is `tenure snapshot take`: the server it reaches (or the
// leader) writes a Raft snapshot of its own now, which compacts its log.
func (e *env) snapshotTake(ctx context.Context, args []string) int {
	return e.query("snapshot take", "snapshot take [-http-addr A] [-json]", args, 0, 0, func(c *client.Client, _ []string) (any, func(), error) {
		snap, _, err := c.Operator().Snapshot(ctx)
		return snap, func() {
			w := e.table()
			row(w, "Snapshot:", snap.ID)
			row(w, "Index:", snap.Index)
			row(w, "Term:", snap.Term)
			row(w, "Size:", fmt.Sprintf("%d bytes", snap.Size))
			w.Flush()
		}, err
	})
}

const operatorUsage = `Usage: tenure operator <subcommand> [args]

Subcommands:
    remove-server [-force] ID
                            Remove a server from the Raft configuration; refused
                            without -force for a server that is alive, or when
                            fewer voters than -bootstrap-expect would remain
    readmit-server ID       Add back a removed server that runs again with its
                            data dir (as a non-voter, promoted once caught up)
    transfer-leader [ID]    Hand leadership to ID, or to the most up-to-date server
    keyring                 List and rotate the gossip encryption keys
    raft promote ID         Make the non-voting server ID a voter
    recover -data-dir DIR -node-id ID [-token-floor N] [-confirm ID]
                            On a STOPPED server, after a quorum of servers is
                            lost for good: make it the only voter of its Raft
                            configuration, keeping its data; start it again,
                            then join fresh servers to it. -token-floor: a
                            bound of the tokens the lost servers handed out;
                            above this server's counter, the counter is
                            raised to it and every held lease is freed
`

const operatorRaftUsage = `Usage: tenure operator raft <subcommand> [args]

Subcommands:
    promote ID    Make the non-voting server ID a voter, also beyond the
                  configured size; the leader must be in touch with it
                  and its log caught up
`

func (e *env) promoteServer(ctx context.Context, args []string) int {
	return e.query("operator raft promote", "operator raft promote ID", args, 1, 1, func(c *client.Client, pos []string) (any, func(), error) {
		res, _, err := c.Operator().PromoteServer(ctx, pos[0])
		return res, func() { fmt.Fprintf(e.stdout, "Server %s is a voter (%d voters)\n", res.ID, res.Voters) }, err
	})
}

func (e *env) removeServer(ctx context.Context, args []string) int {
	fs, cf := e.clusterFlagSet("operator remove-server", "operator remove-server [-force] ID")
	force := fs.Bool("force", false, "remove even a server that is alive, or one whose removal leaves fewer voters than -bootstrap-expect")
	return e.answer(fs, cf, args, 1, 1, func(c *client.Client, pos []string) (any, func(), error) {
		res, _, err := c.Operator().RemoveServer(ctx, pos[0], *force)
		return res, func() {
			fmt.Fprintf(e.stdout, "Removed server %s (%d voters left)\n", res.ID, res.Voters)
			for _, rule := range res.Forced {
				fmt.Fprintf(e.stdout, "Warning: forced past a rule: %s\n", rule)
			}
			fmt.Fprintf(e.stdout, "To bring it back: %s\n", strings.TrimPrefix(res.Readmit, "to bring "+res.ID+" back, "))
		}, err
	})
}

func (e *env) readmitServer(ctx context.Context, args []string) int {
	return e.query("operator readmit-server", "operator readmit-server ID", args, 1, 1, func(c *client.Client, pos []string) (any, func(), error) {
		res, _, err := c.Operator().ReadmitServer(ctx, pos[0])
		return res, func() {
			role := "a non-voter: the leader promotes it once it has caught up, while the cluster has fewer voters than its configured size (or: tenure operator raft promote " + res.ID + ")"
			if res.Voter {
				role = "a voter"
			}
			fmt.Fprintf(e.stdout, "Server %s at %s is in the Raft configuration as %s\n", res.ID, res.RaftAddr, role)
		}, err
	})
}

func (e *env) transferLeader(ctx context.Context, args []string) int {
	return e.query("operator transfer-leader", "operator transfer-leader [ID]", args, 0, 1, func(c *client.Client, pos []string) (any, func(), error) {
		id := "" // the most up-to-date server
		if len(pos) == 1 {
			id = pos[0]
		}
		leader, _, err := c.Operator().TransferLeader(ctx, id)
		return map[string]string{"leader_id": leader}, func() { fmt.Fprintf(e.stdout, "Leadership transferred to %s\n", leader) }, err
	})
}

// metaPairs shows a member's gossip metadata as the k=v pairs of its JSON
// fields that are set.
func metaPairs(m client.MemberMeta) string {
	var kv map[string]any
	b, err := json.Marshal(m)
	if err != nil || json.Unmarshal(b, &kv) != nil {
		return ""
	}
	for k, v := range kv {
		if v == "" {
			delete(kv, k)
		}
	}
	return pairs(kv)
}

// recoverInput is where `tenure operator recover` reads the typed
// confirmation; tests replace it.
var recoverInput io.Reader = os.Stdin

// operatorRecover is `tenure operator recover`: the peers.json recovery of
// hashicorp/raft, for a cluster that lost a quorum for good.
func (e *env) operatorRecover(_ context.Context, args []string) int {
	var dataDir, nodeID, confirm string
	var floor uint64
	fs := e.newFlagSet("operator recover", "operator recover -data-dir DIR -node-id ID [-token-floor N] [-confirm ID]")
	fs.StringVar(&dataDir, "data-dir", "", "the data dir of the stopped server to recover (required)")
	fs.StringVar(&nodeID, "node-id", "", "its node id (required)")
	fs.StringVar(&confirm, "confirm", "", "the node id again, instead of typing it when asked")
	fs.Uint64Var(&floor, "token-floor", 0, "a bound of the tokens the lost servers may have handed out (the newest backup's last token plus a margin); above the survivor's counter, the counter is raised to it and every held lease is freed")
	if _, code, ok := e.parse(fs, args, 0, 0); !ok {
		return code
	}
	if dataDir == "" {
		return e.usageError(fs, "-data-dir is required")
	}
	if nodeID == "" {
		return e.usageError(fs, "-node-id is required")
	}
	fmt.Fprintf(e.stderr, `WARNING: tenure operator recover makes server %[1]s the ONLY voter of its cluster.
Use it only when a quorum of servers is lost for good (their disks are gone) and
%[1]s is stopped. Every entry in its log will count as committed, also writes
whose clients never got an answer. The lost servers must never start again on
their old data dirs: wipe them and join them as new servers. Leases held now
restart with a full TTL when %[1]s starts. The lost servers may have handed
out tokens %[1]s never saw: without -token-floor above them, a key's token
can go back; with it, every held lease is freed instead.
`, nodeID)
	if !e.confirmed(recoverInput, confirm, nodeID, "Type the node id ("+nodeID+") to go on: ", "nothing changed",
		"error: confirmation %q is not the node id %q: nothing changed\n") {
		return exitError
	}
	r, err := cluster.RecoverAlone(dataDir, nodeID, floor, nil)
	if err != nil {
		return e.fail(err)
	}
	var old []string
	for _, s := range r.Before.Servers {
		old = append(old, fmt.Sprintf("%s (%s)", s.ID, s.Address))
	}
	fmt.Fprintf(e.stdout, "Recovered %s: it is now the only voter (was: %s).\n", nodeID, strings.Join(old, ", "))
	fmt.Fprintf(e.stdout, "State: %d leases (%d held), last token %d, cluster %s.\n", r.Leases, r.Held, r.LastToken, r.ClusterID)
	if r.Freed > 0 {
		fmt.Fprintf(e.stdout, "-token-floor %d was above the survivor's counter: %d held leases freed (they may have changed hands on the lost servers).\n", floor, r.Freed)
	}
	fmt.Fprintf(e.stdout, "Next: start %s as before; then start fresh servers (empty data dirs) that join it, and remove nothing: the lost servers are already out.\n", nodeID)
	return exitOK
}

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
