package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
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

While it waits, tenure says on stderr who holds KEY ("waiting: the key is
held by another holder", with the holder and its token), or that it
cannot reach the cluster, and keeps trying.

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
acquired within -wait; 127 if COMMAND cannot be started (checked before
anything is acquired, and again when it starts); 128+n if
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
	if !given(fs, "wait") {
		wait = client.WaitForever
	}
	if wait < 0 {
		return e.usageError(fs, "-wait must not be negative")
	}
	c, log, err := f.client(e.stderr)
	if err != nil {
		return e.fail(err)
	}
	ctx, stopWatch := watchSupervisor(ctx, log)
	defer stopWatch()

	var (
		lease  *client.Lease
		acqErr error
	)
	sig := interruptible(ctx, sigs, func(ctx context.Context) {
		lease, acqErr = acquireSaying(ctx, c, log, key, slots, f.leaseOptions(log), wait)
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

// acquireSaying acquires KEY (or one of its slots) as lock does, waiting
// up to wait. Before it waits it tries once without waiting, so that it
// can say, through log, that someone else holds the key and who: a lock
// held elsewhere must not look like a cluster out of reach (which
// watchSupervisor reports).
func acquireSaying(ctx context.Context, c *client.Client, log hclog.Logger, key string, slots int, opts []client.LeaseOption, wait time.Duration) (*client.Lease, error) {
	acquire := func(wait time.Duration) (*client.Lease, error) {
		o := append(slices.Clone(opts), client.WithWait(wait))
		if slots == 1 {
			return c.Acquire(ctx, key, o...)
		}
		return c.AcquireSemaphore(ctx, key, slots, o...)
	}
	if wait == 0 {
		return acquire(0)
	}
	lease, err := acquire(0)
	var ae *client.APIError
	switch {
	case err == nil:
		return lease, nil
	case errors.Is(err, client.ErrHeld):
		switch {
		case slots > 1:
			log.Info("waiting: every slot is held by another holder", "key", key, "slots", slots)
		case errors.As(err, &ae) && ae.Lease != nil:
			l := ae.Lease
			args := []any{"key", key, "holder", l.Holder, "token", l.Token}
			if l.HasExpiresIn {
				args = append(args, "expires_in", l.ExpiresIn)
			}
			log.Info("waiting: the key is held by another holder", args...)
		default:
			log.Info("waiting: the key is held by another holder (the ACL token may not read whose)", "key", key)
		}
	case errors.As(err, new(*client.SetupError)),
		errors.As(err, &ae) && ae.StatusCode < 500 && ae.StatusCode != http.StatusTooManyRequests:
		return nil, err // a mistake or a refusal that waiting does not change
	case ctx.Err() != nil:
		return nil, err
	}
	return acquire(wait)
}
