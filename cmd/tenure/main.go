// Command tenure is the one binary of tenure: the server, and the commands
// that talk to a running cluster through the public client package.
//
// This package parses flags and wires things together; it holds no logic
// that a Go program using the client package would need.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"github.com/tenure-io/tenure/client"
)

// version is set at build time: -ldflags "-X main.version=v0.1.0".
var version = "dev"

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the command failed
	exitUsage = 2 // the command line is wrong
	// exitRefused: the server refused to start on its data dir (ADR
	// 0015); restarting it changes nothing until an operator acts.
	exitRefused = 78
)

const usageText = `Usage: tenure <command> [args]

Commands:
    server      Run a tenure server
    status      Show the status of a server and the Raft configuration
    leases      List, read, acquire, renew, release and revoke leases
    members     List the gossip members: servers and workers
    events      Show, or follow, what changed: leases, groups, controls, drains
    snapshot    Save, inspect and restore backups of the whole state
    operator    Operator actions: remove-server, transfer-leader, keyring
    keygen      Print a new gossip encryption key
    groups      Create and inspect groups of keys placed over workers
    keys        Disable a key, prohibit a holder on a key
    workers     List workers with their keys; drain a worker
    acl         Bootstrap ACLs; create, list and delete tokens and policies
    demo-worker Run an example worker that owns keys of a group
    bench       Drive a running cluster and report throughput and latency
    lock        Run a command while holding a lease (or one of N slots)
    elect       Run a command only while leading an election
    tls         Make a CA and server and client certificates for TLS
    debug       Archive one server's status, metrics, profiles and last logs (bug reports)
    ui          Serve the page (/ui) on this machine for servers that require client certificates
    version     Print the version

Commands that talk to a cluster take -http-addr (comma-separated list,
default $TENURE_HTTP_ADDR or 127.0.0.1:7500; https:// addresses for TLS),
-ca-file, -client-cert, -client-key (TLS; default $TENURE_CACERT,
$TENURE_CLIENT_CERT, $TENURE_CLIENT_KEY), -token or -acl-token (the ACL
token secret, default $TENURE_HTTP_TOKEN; on "leases renew" and "leases
release" -token is the lease's fencing token, so use -acl-token there) and
-json.
Run "tenure <command> -h" for the flags of a command.
`

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "server" {
		// The server handles its own signals.
		os.Exit(runServer(args[1:]))
	}
	if len(args) > 0 && (args[0] == "lock" || args[0] == "elect") {
		// They pass signals on to their command.
		os.Exit(runSupervisor(args))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, args, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches args to a command and returns the exit code. ctx is
// cancelled when the user interrupts the command.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	e := &env{stdout: stdout, stderr: stderr}
	name, rest := args[0], args[1:]
	if cmd, ok := e.commands()[name]; ok && !strings.Contains(name, " ") {
		if name != "lock" && name != "elect" && name != "server" {
			// lock and elect log it themselves.
			var stop func()
			ctx, stop = watchCommand(ctx, stderr, client.DefaultConfig().Timeout)
			defer stop()
		}
		return cmd(ctx, rest)
	}
	switch name {
	case "version", "-v", "-version", "--version":
		fmt.Fprintf(stdout, "tenure %s (%s)\n", version, runtime.Version())
		return exitOK
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usageText)
		return exitOK
	}
	fmt.Fprintf(stderr, "error: unknown command %q\nRun 'tenure -h' for the list of commands.\n", name)
	return exitUsage
}

// commands returns what runs each command and subcommand, by its path
// ("leases get"). A command with subcommands runs the ones whose path is
// its own and one more word.
func (e *env) commands() map[string]command {
	cmds := map[string]command{
		"server":                   func(_ context.Context, a []string) int { return runServer(a) },
		"status":                   e.status,
		"members":                  e.members,
		"events":                   e.events,
		"keygen":                   e.keygen,
		"bench":                    e.bench,
		"lock":                     func(ctx context.Context, a []string) int { return e.lock(ctx, nil, a) },
		"elect":                    func(ctx context.Context, a []string) int { return e.elect(ctx, nil, a) },
		"demo-worker":              e.demoWorker,
		"debug":                    e.debug,
		"ui":                       e.ui,
		"leases list":              e.leasesList,
		"leases get":               e.leasesGet,
		"leases acquire":           e.leasesAcquire,
		"leases renew":             e.leasesRenew,
		"leases release":           e.leasesRelease,
		"leases revoke":            e.leasesRevoke,
		"leases stale":             e.leasesStale,
		"snapshot save":            e.snapshotSave,
		"snapshot inspect":         e.snapshotInspect,
		"snapshot restore":         e.snapshotRestore,
		"snapshot list":            e.snapshotList,
		"snapshot take":            e.snapshotTake,
		"operator remove-server":   e.removeServer,
		"operator readmit-server":  e.readmitServer,
		"operator transfer-leader": e.transferLeader,
		"operator recover":         e.operatorRecover,
		"operator raft promote":    e.promoteServer,
		"operator keyring list":    e.keyringList,
		"groups list":              e.groupsList,
		"groups get":               e.groupsGet,
		"groups create":            e.groupsCreate,
		"groups delete":            e.groupsDelete,
		"groups max-per-worker":    e.groupsMax,
		"groups balance":           e.groupsBalance,
		"groups set-keys":          e.groupsSetKeys,
		"groups assignment":        e.groupsAssignment,
		"workers list":             e.workersList,
		"workers roll":             e.workersRoll,
		"acl bootstrap":            e.aclBootstrap,
		"acl token create":         e.aclTokenCreate,
		"acl token list":           e.aclTokenList,
		"acl token delete":         e.aclTokenDelete,
		"acl policy create":        e.aclPolicyCreate,
		"acl policy list":          e.aclPolicyList,
		"acl policy read":          e.aclPolicyRead,
		"acl policy delete":        e.aclPolicyDelete,
		"tls ca create":            e.tlsCACreate,
		"tls cert create":          e.tlsCertCreate,
	}
	for _, verb := range []string{"show", "disable", "enable", "prohibit", "allow"} {
		cmds["keys "+verb] = bind(e.keyControl, verb)
	}
	for _, op := range []string{client.KeyringInstall, client.KeyringUse, client.KeyringRemove} {
		cmds["operator keyring "+op] = bind(e.keyringChange, op)
	}
	cmds["groups add-keys"], cmds["groups remove-keys"] = bind(e.groupsKeys, true), bind(e.groupsKeys, false)
	cmds["workers drain"], cmds["workers undrain"] = bind(e.workersDrain, true), bind(e.workersDrain, false)
	cmds["acl token read"], cmds["acl token self"] = bind(e.aclTokenRead, false), bind(e.aclTokenRead, true)
	for _, usage := range []string{leasesUsage, snapshotUsage, operatorUsage, operatorRaftUsage, keyringUsage,
		groupsUsage, keysUsage, workersUsage, aclUsage, aclTokenUsage, aclPolicyUsage, tlsUsage} {
		cmds[commandPath(usage)] = func(ctx context.Context, args []string) int {
			return e.subcommands(ctx, args, usage, subcommandsOf(cmds, commandPath(usage)))
		}
	}
	// tls ca and tls cert print the usage of tls.
	for _, path := range []string{"tls ca", "tls cert"} {
		cmds[path] = func(ctx context.Context, args []string) int {
			return e.subcommands(ctx, args, tlsUsage, subcommandsOf(cmds, path))
		}
	}
	return cmds
}

// subcommandsOf returns the subcommands of the command path in cmds, by
// their last word.
func subcommandsOf(cmds map[string]command, path string) map[string]command {
	sub := map[string]command{}
	for p, f := range cmds {
		if word, ok := strings.CutPrefix(p, path+" "); ok && !strings.Contains(word, " ") {
			sub[word] = f
		}
	}
	return sub
}

// command runs a command on its arguments and returns its exit code.
type command = func(context.Context, []string) int

// bind returns the command that runs f with v as its last argument.
func bind[V any](f func(context.Context, []string, V) int, v V) command {
	return func(ctx context.Context, args []string) int { return f(ctx, args, v) }
}
