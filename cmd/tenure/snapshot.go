package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
)

const snapshotUsage = `Usage: tenure snapshot <subcommand> [args]

Subcommands:
    save FILE               Write a backup of the whole state, read from the
                            leader (consistent: every acknowledged write is
                            in it), to FILE; it is checked before FILE is
                            written
    inspect FILE            Check a backup (format, checksum, every record)
                            and print what it holds; needs no server
    restore [-token-floor N] [-unverified] FILE
                            Replace the whole cluster's state with a backup,
                            through Raft (every server takes it). Leases
                            held now keep their holder; the backup's other
                            held leases restart with a full TTL; the next
                            token is above every token handed out before
                            the backup and since, and a key whose last
                            token is higher now than in the backup comes
                            back free with it. The ACL state is restored
                            only with the acl right. A backup this cluster
                            did not sign (another cluster's, an edited one,
                            one of a build before signed backups) is
                            refused without -unverified, which needs the
                            acl right. Restoring into another cluster:
                            -token-floor is the old cluster's last token
                            (or more)
    list [-json] DIR        List the backups a server wrote to its -backup-dir
                            DIR, oldest first, each checked
    take                    Make the server that answers take a Raft
                            snapshot of its own now (compacts its log)

save and restore need the operator right when ACLs are on; restoring the
backup's ACL state, and -unverified, need the acl right too.
`

// snapshotSave is `tenure snapshot save FILE`.
func (e *env) snapshotSave(ctx context.Context, args []string) int {
	return e.query("snapshot save", "snapshot save [-http-addr A] [-json] FILE", args, 1, 1, func(c *client.Client, pos []string) (any, func(), error) {
		b, _, err := c.Operator().SaveSnapshot(ctx)
		if err != nil {
			return nil, nil, err
		}
		info, err := fsm.InspectSnapshot(b)
		if err != nil {
			return nil, nil, fmt.Errorf("the backup read from the cluster is damaged, %s not written: %w", pos[0], err)
		}
		if err := cluster.WriteFileDurably(pos[0], b, 0o600); err != nil {
			return nil, nil, err
		}
		return info, func() {
			fmt.Fprintf(e.stdout, "Saved %s: %d bytes, index %d, term %d, %d leases (%d held), last token %d\n",
				pos[0], info.Size, info.Index, info.Term, info.Leases, info.Held, info.LastToken)
		}, nil
	})
}

// snapshotInspect is `tenure snapshot inspect FILE`.
func (e *env) snapshotInspect(_ context.Context, args []string) int {
	file, asJSON, code, ok := e.parseFileArg("snapshot inspect", "snapshot inspect [-json] FILE", args)
	if !ok {
		return code
	}
	_, info, err := readBackup(file, "")
	return e.show(asJSON, info, err, func() {
		w := e.table()
		row(w, "File:", file)
		row(w, "Format version:", info.Version)
		row(w, "Index:", info.Index)
		row(w, "Term:", info.Term)
		row(w, "Cluster:", info.ClusterID)
		row(w, "Signed:", signedText(info.Signed))
		row(w, "Last token:", info.LastToken)
		row(w, "Leases:", fmt.Sprintf("%d (%d held)", info.Leases, info.Held))
		row(w, "Groups:", info.Groups)
		row(w, "ACL tokens:", info.ACLTokens)
		row(w, "ACL policies:", info.ACLPolicies)
		row(w, "Size:", fmt.Sprintf("%d bytes", info.Size))
		row(w, "CRC-32C:", fmt.Sprintf("%08x (checked)", info.CRC32C))
		w.Flush()
	})
}

// snapshotRestore is `tenure snapshot restore FILE`.
func (e *env) snapshotRestore(ctx context.Context, args []string) int {
	var opts client.RestoreOptions
	var confirm string
	fs, cf := e.clusterFlagSet("snapshot restore", "snapshot restore [-http-addr A] [-token-floor N] [-unverified] [-confirm CLUSTER_ID] [-json] FILE")
	fs.StringVar(&confirm, "confirm", "", "the id of the cluster to restore into (tenure status shows it), instead of typing it when asked")
	fs.Uint64Var(&opts.TokenFloor, "token-floor", 0, "the next token is above N (the last token of the cluster the backup came from, when it is another)")
	fs.BoolVar(&opts.Unverified, "unverified", false, "restore a backup this cluster did not sign (another cluster's, an edited one, or one of a build before signed backups); needs the acl right")
	c, pos, code, ok := e.connect(fs, cf, args, 1, 1)
	if !ok {
		return code
	}
	b, info, err := readBackup(pos[0], "; nothing restored")
	if err != nil {
		return e.fail(err)
	}
	if code, ok := e.confirmRestore(ctx, c, pos[0], info, confirm); !ok {
		return code
	}
	res, _, err := c.Operator().RestoreSnapshotWith(ctx, b, opts)
	return e.show(cf.json, res, err, func() {
		fmt.Fprintf(e.stdout, "Restored %s (index %d of cluster %s): %d leases, %d held now, next token above %d\n",
			pos[0], res.Snapshot.Index, res.Snapshot.ClusterID, res.Restored.Leases, res.Restored.Held, res.Restored.LastToken)
		if !res.Verified {
			fmt.Fprintln(e.stderr, "warning: the backup is not signed by this cluster (restored because -unverified was given)")
		}
		if !res.ACLRestored {
			fmt.Fprintln(e.stdout, "ACL state: the cluster's own kept (restoring the backup's needs the acl right)")
		}
		if !res.Replicated {
			fmt.Fprintln(e.stderr, "warning: the leader restored the backup, but a quorum of servers had not taken it when it answered: check tenure status until a leader serves")
		}
	})
}

// parseFileArg parses the args of a command that reads the one file (or
// directory) it names and talks to no server: its only flag is -json.
func (e *env) parseFileArg(name, usage string, args []string) (file string, asJSON bool, code int, ok bool) {
	fs := e.newFlagSet(name, usage)
	fs.BoolVar(&asJSON, "json", false, "print JSON")
	pos, code, ok := e.parse(fs, args, 1, 1)
	if !ok {
		return "", false, code, false
	}
	return pos[0], asJSON, exitOK, true
}

// readBackup reads the backup file, refusing one larger than any the
// cluster would take, and checks it; the error of a damaged one names the
// file and ends with suffix.
func readBackup(file, suffix string) ([]byte, fsm.SnapshotInfo, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fsm.SnapshotInfo{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fsm.SnapshotInfo{}, err
	}
	if st.Size() > client.MaxSnapshotBytes {
		return nil, fsm.SnapshotInfo{}, fmt.Errorf("%s: %d bytes is more than a snapshot can be (%d)", file, st.Size(), client.MaxSnapshotBytes)
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && st.Size() > 0 {
		return nil, fsm.SnapshotInfo{}, fmt.Errorf("read %s: %w", file, err)
	}
	info, err := fsm.InspectSnapshot(b)
	if err != nil {
		return nil, info, fmt.Errorf("%s: %w%s", file, err, suffix)
	}
	return b, info, nil
}

// snapshotList is `tenure snapshot list DIR`.
func (e *env) snapshotList(_ context.Context, args []string) int {
	dir, asJSON, code, ok := e.parseFileArg("snapshot list", "snapshot list [-json] DIR", args)
	if !ok {
		return code
	}
	files, err := cluster.ListBackups(dir)
	if err != nil {
		return e.fail(err)
	}
	damaged := 0
	type entry struct {
		File  string            `json:"file"`
		Info  *fsm.SnapshotInfo `json:"info,omitempty"`
		Error string            `json:"error,omitempty"`
	}
	var out []entry
	for _, f := range files {
		en := entry{File: f.Path}
		if f.Err != nil {
			damaged++
			en.Error = f.Err.Error()
		} else {
			info := f.Info
			en.Info = &info
		}
		out = append(out, en)
	}
	if code := e.show(asJSON, out, nil, func() {
		e.printTable([]any{"FILE", "INDEX", "LEASES", "HELD", "LAST TOKEN", "SIZE", "CHECK"}, len(out), func(i int) []any {
			en := out[i]
			if en.Info == nil {
				return []any{en.File, "-", "-", "-", "-", "-", en.Error}
			}
			return []any{en.File, en.Info.Index, en.Info.Leases, en.Info.Held, en.Info.LastToken, en.Info.Size, "ok"}
		})
	}); code != exitOK {
		return code
	}
	if damaged > 0 {
		fmt.Fprintf(e.stderr, "error: %d of %d backups in %s do not read back\n", damaged, len(files), dir)
		return exitError
	}
	return exitOK
}

func signedText(signed bool) string {
	if signed {
		return "yes (only the cluster that wrote it can check the signature)"
	}
	return "no (a restore needs -unverified)"
}

// restoreInput is where `tenure snapshot restore` reads the typed
// confirmation; tests replace it.
var restoreInput io.Reader = os.Stdin

// confirmRestore says what restoring the backup file (info) replaces on
// the cluster c reaches, and goes on only when the user types that
// cluster's id (or gave it as -confirm): a restore replaces the state of
// every key, group and key control, and with the acl right every ACL
// token and policy, so a mistyped -http-addr must not reach another
// cluster.
func (e *env) confirmRestore(ctx context.Context, c *client.Client, file string, info fsm.SnapshotInfo, confirm string) (int, bool) {
	st, _, err := c.Status(ctx)
	if err != nil {
		return e.fail(fmt.Errorf("read the status of the cluster to restore into: %w; nothing restored", err)), false
	}
	// A cluster with no id yet (no leader ever) goes by its server's id.
	target := cmp.Or(st.ClusterID, st.NodeID)
	fmt.Fprintf(e.stderr, `tenure snapshot restore replaces the whole state of cluster %s (server %s answered)
with %s: index %d of cluster %s, %d leases (%d held), %d groups, last token %d.
No lease held now changes hands; every other key, group and control takes the
backup's state, and with the acl right so do the ACL tokens and policies
(docs/production.md, Backup and restore).
`, dash(st.ClusterID), st.NodeID, file, info.Index, dash(info.ClusterID), info.Leases, info.Held, info.Groups, info.LastToken)
	if !e.confirmed(restoreInput, confirm, target, "Type the id of the cluster to restore into ("+target+") to go on: ",
		"nothing restored (give -confirm "+target+" in scripts)",
		"error: confirmation %q is not the id of the cluster to restore into, %q: nothing restored\n") {
		return exitError, false
	}
	return exitOK, true
}
