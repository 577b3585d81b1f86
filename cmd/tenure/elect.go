package main

import (
	"context"
	"os"

	"github.com/tenure-io/tenure/client"
)

const electUsage = `elect [flags] NAME -- COMMAND [ARGS...]

Run COMMAND only while this process leads the election NAME (lease key
elections/NAME, or NAME itself when it contains a slash). tenure campaigns
(waiting in line behind the current leader), runs COMMAND once elected,
with TENURE_KEY, TENURE_TOKEN (the leadership's fencing token) and
TENURE_HOLDER in its environment, and keeps the lease alive while COMMAND
runs.

If leadership is lost, COMMAND and everything it started get SIGTERM, and
SIGKILL -grace later; once COMMAND has exited tenure resigns and campaigns
again. Leadership is lost TTL minus a margin after tenure's last
successful renewal was sent, and the margin is -grace plus max(TTL/10,
100ms), so that the SIGKILL lands before the next leader can be elected
(TTL after that renewal): -grace must be at most TTL/2 - max(TTL/10,
100ms) (its default, 1s, is lowered to that for a shorter TTL). A leader
that the cluster revoked, or a paused tenure, may still act after its
successor started: fence writes with TENURE_TOKEN. If COMMAND exits on
its own, tenure resigns (the next candidate is elected at once) and exits
with COMMAND's status. SIGINT, SIGTERM and SIGHUP are passed on to
COMMAND; tenure resigns once COMMAND has exited and exits with its
status. Before resigning, tenure kills with SIGKILL whatever COMMAND left
running. A signal while tenure campaigns ends it with status 0.
Leadership lost before COMMAND could start is handled as a loss while it
ran: COMMAND is not started and tenure campaigns again.

COMMAND runs in a process group of its own, and everything it started is
stopped with it. On Linux COMMAND is also killed if tenure itself is
killed, but the processes COMMAND started are not (on other systems
neither is COMMAND): after a SIGKILL of tenure they go on running without
the leadership. Have COMMAND exec its final program (sh -c '...; exec
./server') rather than run it as a child, and fence its writes with
TENURE_TOKEN.

Exit status: COMMAND's (128+n if signal n killed it) when it exited on its
own or after a signal to tenure; 75 if leadership was lost while tenure was
being stopped; 127 if COMMAND cannot be started (checked before
campaigning, and again when it starts); 0 when stopped while
campaigning; 1 for other errors, 2 for usage errors.`

// elect is `tenure elect` (see electUsage): it campaigns, runs a command
// while it leads, stops the command's process group when leadership is
// lost (SIGKILL before a successor can be elected) and campaigns again,
// and resigns once the command exited on its own or after a signal. On
// Linux the command dies with a killed tenure, but what it started does
// not: commands should exec their final program and fence their writes
// with TENURE_TOKEN. It returns the exit status; signals arrive on sigs.
func (e *env) elect(ctx context.Context, sigs <-chan os.Signal, args []string) int {
	e = e.synced()
	var f supervisorFlags
	fs := e.newFlagSet("elect", electUsage)
	f.register(fs)
	name, command, code, ok := e.parseSupervised(fs, &f, args)
	if !ok {
		return code
	}
	c, log, err := f.client(e.stderr)
	if err != nil {
		return e.fail(err)
	}
	ctx, stopWatch := watchSupervisor(ctx, log)
	defer stopWatch()
	election := c.Election(name, f.leaseOptions(log)...)
	for {
		log.Info("campaigning", "election", election.Name(), "key", election.Key(), "holder", c.Holder())
		var (
			lead   *client.Leadership
			camErr error
		)
		sig := interruptible(ctx, sigs, func(ctx context.Context) {
			lead, camErr = election.Campaign(ctx)
		})
		if sig != nil || ctx.Err() != nil {
			if camErr == nil {
				release(log, lead.Lease()) // elected as tenure was told to stop
			}
			return exitOK
		}
		if camErr != nil {
			return e.fail(camErr)
		}
		log.Info("elected; running the command", "election", election.Name(), "token", lead.Token(), "command", fmtCommand(command))

		o := e.supervise(ctx, sigs, log, lead.Lease(), command, f.grace)
		release(log, lead.Lease())
		switch {
		case o.lost && o.signalled:
			return exitLost
		case o.lost:
			log.Warn("leadership lost; the command was stopped; campaigning again", "election", election.Name(), "status", o.code)
			continue
		}
		log.Info("the command exited; resigned", "election", election.Name(), "status", o.code)
		return o.code
	}
}
