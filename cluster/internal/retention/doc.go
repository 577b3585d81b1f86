// Package retention owns the leader's forgetting of free key records
// (-free-key-retention): a Sweeper notes since when each key has been
// free, on the leader's monotonic clock, and proposes fsm.Forget for the
// keys free for longer than the retention, in bounded batches.
//
// It proposes through the function it is given (the leader's proposer)
// and reads the state machine; it never writes to Raft itself. It must
// never forget a key before the retention has passed on one leader's
// clock, nor a key of a group: a new leader counts again from its own
// promotion.
package retention
