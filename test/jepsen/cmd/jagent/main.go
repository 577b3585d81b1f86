// Command jagent is the agent of tenure's Jepsen-style fault suite: the
// processes that the suite starts as lease holders, each in a network
// namespace of its own, and the fenced register they write to. Each
// subcommand appends what it does to a history file (package
// test/jepsen/history), one JSON event per line timed on CLOCK_MONOTONIC,
// for the suite's checkers.
//
//	jagent store    -listen IP:PORT -history FILE
//	jagent register -servers URLS -history FILE -name NAME [-procs 3] [-keys k0,k1] [-ttl 2s] [-timeout 1s]
//	jagent mutex    -servers URLS -store URL -id ID -history FILE [-keys k0,k1] [-ttl 2s] [-work 40ms] [-stall D -stall-prob P]
//	jagent elect    -servers URLS -id ID -election NAME -history FILE [-ttl 2s]
//	jagent place    -servers URLS -gossip-addr IP:PORT -group G -id ID -history FILE [-join IP:PORT,...] [-status-addr IP:PORT]
//	jagent forge    -gossip-addr IP:PORT -join IP:PORT,... -id ID -history FILE [-raft-addr IP:PORT -raft-to IP:PORT] [-http-addr IP:PORT -http-to IP:PORT]
//
// Every workload also takes -seed N (the seed of every random choice it
// makes) and -duration D (0: run until SIGTERM).
//
// A workload stops on SIGTERM or SIGINT, or when -duration has passed: it
// starts no new operation, lets the one in flight end, releases what it
// holds (best effort, about a second), closes its history and exits 0. It
// may be paused (SIGSTOP) or killed (SIGKILL) at any moment: each event is
// a single write(2), so a killed agent loses at most the event it was
// writing, and an agent started again on the same history file first cuts
// off such a torn last line.
//
// Exit codes: 0 after a clean stop; 1 when the agent cannot run (the
// history cannot be opened, an address cannot be bound); 2 for a usage
// error, including a missing or unknown subcommand.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1 // the agent could not run
	exitUsage = 2 // the command line is wrong
)

const usageText = `Usage: jagent <subcommand> [flags]

Subcommands:
    store     Serve the fenced register that mutex workers write to
    register  Issue raw acquire/renew/release/read requests (linearizability workload)
    mutex     Hold leases with the client package and do fenced writes on the store
    elect     Campaign, lead and resign an election with the client package
    place     Run a placement worker of a group with the client package
    forge     Announce a forged server on gossip, relaying its ports to a real one

Run "jagent <subcommand> -h" for the flags of a subcommand.
`

// subcommands maps each subcommand to its entry point. Each returns the
// process's exit code; ctx ends when the agent must stop.
var subcommands = map[string]func(ctx context.Context, args []string, stderr io.Writer) int{
	"store":    runStore,
	"register": runRegister,
	"mutex":    runMutex,
	"elect":    runElect,
	"place":    runPlace,
	"forge":    runForge,
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	code := run(ctx, os.Args[1:], os.Stderr)
	stop()
	os.Exit(code)
}

// run dispatches args to a subcommand and returns the exit code.
func run(ctx context.Context, args []string, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stderr, usageText)
		return exitOK
	}
	cmd, ok := subcommands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "jagent: unknown subcommand %q\n\n%s", args[0], usageText)
		return exitUsage
	}
	return cmd(ctx, args[1:], stderr)
}
