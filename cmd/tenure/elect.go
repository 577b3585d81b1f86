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
SIGKILL after -grace; once COMMAND has exited tenure resigns and campaigns
again. If COMMAND exits on its own, tenure resigns (the next candidate is
elected at once) and exits with COMMAND's status. SIGINT, SIGTERM and
SIGHUP are passed on to COMMAND; tenure resigns once COMMAND has exited and
exits with its status. A signal while tenure campaigns ends it with status
0. COMMAND runs in a process group of its own; on Linux it is killed if
tenure itself is killed.

Exit status: COMMAND's (128+n if signal n killed it) when it exited on its
own or after a signal to tenure; 75 if leadership was lost while tenure was
being stopped; 127 if COMMAND could not be started; 0 when stopped while
campaigning; 1 for other errors, 2 for usage errors.`

func (e *env) elect(ctx context.Context, sigs <-chan os.Signal, args []string) int {
	e = e.synced()
	var f supervisorFlags
	fs := e.newFlagSet("elect", electUsage)
	f.register(fs)
	before, command, ok := splitCommand(args)
	if !ok {
		if _, code, ok := e.parse(fs, args, 0, -1); !ok {
			return code // -h, or a bad flag
		}
		return e.usageError(fs, "the command to run must follow --")
	}
	pos, code, ok := e.parse(fs, before, 1, 1)
	if !ok {
		return code
	}
	c, log, err := f.client(e.stderr)
	if err != nil {
		return e.fail(err)
	}
	election := c.Election(pos[0], f.leaseOptions(log)...)
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
