// Package worker is tenure's placement worker: a [Worker] owns the keys of
// one group that the cluster's balancer assigns to it, through a
// [client.Client].
//
//	w := worker.New(c, "partitions", func(ctx context.Context, key string, token uint64) {
//		// work on key until ctx ends; fence writes with token
//	}, worker.WithCapacity(32), worker.WithWorkerTTL(10*time.Second))
//	err := w.Run(ctx)
//
// The worker announces itself over the cluster's gossip (memberlist): it
// is the one part of the Go client that compiles memberlist, kept in a
// package of its own so that programs that only take leases do not. It
// decides nothing about ownership on its own: exclusivity comes from the
// leases alone, the assignment is intent. Run documents the goroutines it
// starts and when they end.
package worker
