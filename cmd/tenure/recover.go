package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tenure-io/tenure/cluster"
)

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
