package main

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/client"
)

const (
	// beliefInterval is how often a leader records that it leads.
	beliefInterval = 50 * time.Millisecond
	// maxCampaignPause bounds the random pause before campaigning again
	// after a leadership ended or a campaign failed.
	maxCampaignPause = 500 * time.Millisecond
)

// candidate campaigns in an election, leads for a while, resigns, and
// campaigns again.
type candidate struct {
	holderProc
	name string
}

// runElect is `jagent elect`.
func runElect(ctx context.Context, args []string, stderr io.Writer) int {
	var (
		hf       holderFlags
		election string
	)
	fs := newFlagSet("elect", "-servers URLS -id ID -election NAME -history FILE [-ttl D] [-seed N] [-duration D]", stderr)
	hf.register(fs)
	fs.StringVar(&election, "election", "", "name of the election (its key is client.ElectionKey(NAME)) (required)")
	check := func() error {
		if election == "" {
			return errors.New("-election is required")
		}
		return nil
	}
	return runHolder(ctx, fs, args, stderr, &hf, check, func(ctx context.Context, log hclog.Logger, rec *recorder, c *client.Client) int {
		cd := &candidate{holderProc: newHolderProc(hf, log, rec, c), name: election}
		log.Info("starting", "id", hf.id, "election", election, "key", client.ElectionKey(election), "ttl", hf.ttl, "seed", hf.seed, "servers", hf.urls)
		cd.run(ctx)
		return exitOK
	})
}

// run campaigns until ctx ends. Each campaign is under a new holder: a
// leadership whose resignation failed may still hold the key on the
// cluster, which would hand it back to the same holder as a retry.
func (cd *candidate) run(ctx context.Context) {
	for ctx.Err() == nil {
		holder := cd.holders.next()
		e := cd.c.Election(cd.name, client.WithTTL(cd.ttl), client.WithHolder(holder),
			client.WithHooks(leaseHooks(cd.rec, cd.id)))
		lead, err := e.Campaign(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			cd.log.Warn("campaign failed", "holder", holder, "error", err)
			sleepCtx(ctx, between(cd.rng, 0, maxCampaignPause))
			continue
		}
		cd.log.Info("leading", "key", lead.Key(), "holder", holder, "token", lead.Token())
		cd.lead(ctx, lead)
		sleepCtx(ctx, between(cd.rng, 0, maxCampaignPause))
	}
}

// lead records a Belief every beliefInterval for a random 1 to 4 TTLs,
// until the leadership is lost or ctx ends, then resigns (within
// releaseBudget), recording Released first unless the leadership was lost.
func (cd *candidate) lead(ctx context.Context, lead *client.Leadership) {
	l := lead.Lease()
	end := time.Now().Add(between(cd.rng, cd.ttl, 4*cd.ttl))
	tick := time.NewTicker(beliefInterval)
	defer tick.Stop()
	for believe(cd.rec, cd.id, l) && ctx.Err() == nil && time.Now().Before(end) {
		select {
		case <-tick.C:
		case <-ctx.Done():
		case <-lead.Done():
		}
	}
	if err := lead.Err(); err != nil {
		cd.log.Warn("leadership lost", "key", lead.Key(), "token", lead.Token(), "error", err)
	}
	released(cd.rec, cd.id, l)
	rctx, cancel := context.WithTimeout(context.Background(), releaseBudget)
	defer cancel()
	if err := lead.Resign(rctx); err != nil {
		cd.log.Warn("resign failed; the lease will expire", "key", lead.Key(), "token", lead.Token(), "error", err)
		return
	}
	cd.log.Info("resigned", "key", lead.Key(), "token", lead.Token())
}
