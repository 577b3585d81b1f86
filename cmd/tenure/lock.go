package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/tenure-io/tenure/client"
)

const lockUsage = `lock [flags] KEY -- COMMAND [ARGS...]

Run COMMAND while holding the lease on KEY, and release the lease when
COMMAND exits. tenure waits for the lease (all along by default, -wait to
bound it), keeps it alive while COMMAND runs, and gives COMMAND the
environment variables TENURE_KEY, TENURE_TOKEN (the fencing token: pass it
with every write) and TENURE_HOLDER.

If the lease is lost (refused by the cluster, or no renewal succeeded
within TTL minus a margin), COMMAND and everything it started get SIGTERM,
and SIGKILL -grace later. The margin is -grace plus max(TTL/10, 100ms), so
that the SIGKILL lands before the cluster can give the key to the next
holder (TTL after tenure's last successful renewal was sent): -grace must
be at most TTL/2 - max(TTL/10, 100ms) (its default, 1s, is lowered to that
for a shorter TTL). A lease that the cluster refused may be someone
else's already, and a paused tenure acts late: fence writes with
TENURE_TOKEN. SIGINT, SIGTERM and SIGHUP sent to tenure are passed on to
COMMAND; tenure releases the lease once COMMAND has exited, after killing
with SIGKILL whatever COMMAND left running. If the lease was lost before
COMMAND could start, COMMAND is not started (status 75).

COMMAND runs in a process group of its own (it should not read the
terminal), and everything it started is stopped with it. On Linux
COMMAND is also killed if tenure itself is killed, but the processes
COMMAND started are not (on other systems neither is COMMAND): after a
SIGKILL of tenure they go on running without the lease. Have COMMAND exec
its final program (sh -c '...; exec ./job') rather than run it as a
child, and fence its writes with TENURE_TOKEN.

With -n N, KEY is a semaphore of N slots (keys KEY/slot-0 ... KEY/slot-N-1)
and tenure takes exactly one: it reads the slots, tries each free one in
order without waiting, and when all are held queues on every slot at once
and keeps the first granted (any other granted meanwhile is released).

Exit status: COMMAND's (128+n if signal n killed it); 75 if the lease was
lost while COMMAND ran or before it started; 76 if the lease was not
acquired within -wait; 127 if COMMAND could not be started; 128+n if
signal n stopped tenure while it waited; 1 for other errors (e.g. the
cluster cannot be reached), 2 for usage errors.`

// lock is `tenure lock` (see lockUsage): it runs a command while holding a
// lease, stops the command's process group when the lease is lost (SIGKILL
// before the cluster can free the key), and releases the lease once the
// command has exited. On Linux the command dies with a killed tenure, but
// what it started does not: commands should exec their final program and
// fence their writes with TENURE_TOKEN. It returns the exit status;
// signals arrive on sigs.
func (e *env) lock(ctx context.Context, sigs <-chan os.Signal, args []string) int {
	e = e.synced()
	var f supervisorFlags
	var slots int
	var wait time.Duration
	fs := e.newFlagSet("lock", lockUsage)
	f.register(fs)
	fs.IntVar(&slots, "n", 1, "make KEY a semaphore of this many slots; hold one")
	fs.DurationVar(&wait, "wait", 0, "give up if the lease is not acquired within this time (default: wait until stopped; 0s: do not wait)")
	key, command, code, ok := e.parseSupervised(fs, &f, args)
	if !ok {
		return code
	}
	if slots < 1 || slots > client.MaxSemaphoreSlots {
		return e.usageError(fs, fmt.Sprintf("-n must be between 1 and %d, got %d", client.MaxSemaphoreSlots, slots))
	}
	waitSet := false
	fs.Visit(func(fl *flag.Flag) { waitSet = waitSet || fl.Name == "wait" })
	if !waitSet {
		wait = client.WaitForever
	}
	if wait < 0 {
		return e.usageError(fs, "-wait must not be negative")
	}
	c, log, err := f.client(e.stderr)
	if err != nil {
		return e.fail(err)
	}
	opts := append(f.leaseOptions(log), client.WithWait(wait))

	var (
		lease  *client.Lease
		acqErr error
	)
	sig := interruptible(ctx, sigs, func(ctx context.Context) {
		if slots == 1 {
			lease, acqErr = c.Acquire(ctx, key, opts...)
		} else {
			lease, acqErr = c.AcquireSemaphore(ctx, key, slots, opts...)
		}
	})
	switch {
	case acqErr == nil && (sig != nil || ctx.Err() != nil):
		release(log, lease) // granted as tenure was told to stop
		return interruptedCode(sig)
	case sig != nil || ctx.Err() != nil:
		return interruptedCode(sig)
	case errors.Is(acqErr, client.ErrHeld):
		fmt.Fprintf(e.stderr, "error: %s not acquired within %v: %v\n", key, wait, acqErr)
		return exitNotAcquired
	case acqErr != nil:
		return e.fail(acqErr)
	}
	log.Info("lease acquired; running the command", "key", lease.Key(), "token", lease.Token(), "holder", lease.Holder(), "command", fmtCommand(command))

	o := e.supervise(ctx, sigs, log, lease, command, f.grace)
	release(log, lease)
	if o.lost {
		log.Error("the command was stopped: lease lost", "key", lease.Key(), "status", o.code)
		return exitLost
	}
	return o.code
}
