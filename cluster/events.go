package cluster

import (
	"context"

	"github.com/tenure-io/tenure/cluster/internal/events"
	"github.com/tenure-io/tenure/fsm"
)

// MaxEventsAnswer bounds the events of one Events call.
const MaxEventsAnswer = events.MaxAnswer

// ErrCompacted is matched by the error of Events when the events asked for
// are no longer in this node's history (an *fsm.CompactedError says from
// which index on it holds them).
var ErrCompacted = fsm.ErrCompacted

type actorKey struct{}

// WithActor returns ctx carrying the operator on whose behalf the writes
// made with it are proposed: the accessor id of the request's ACL token, or
// "anonymous". Operator commands (revoke, groups, key controls, drain) are
// then proposed wrapped in fsm.By, and their events name the actor. Without
// ACLs nobody sets it.
func WithActor(ctx context.Context, accessor string) context.Context {
	if accessor == "" {
		return ctx
	}
	if len(accessor) > fsm.MaxAccessorLen {
		// Accessor ids are UUIDs; a longer one would make an entry that
		// no replica can decode. Name it by a prefix rather than fail the
		// operator's write.
		accessor = accessor[:fsm.MaxAccessorLen]
	}
	return context.WithValue(ctx, actorKey{}, accessor)
}

// command is what the proposer puts in the batch for o: its command, in a
// By when an operator's actor came with it. A holder's own acquires and
// releases are never wrapped: the holder is in their events already.
func (o *op) command() fsm.Command {
	switch o.cmd.(type) {
	case fsm.Acquire, fsm.Release:
		return o.cmd
	}
	if o.by == "" {
		return o.cmd
	}
	return fsm.By{Accessor: o.by, Cmd: o.cmd}
}

// Events reads this node's event history: the events after index after
// that match f (at most limit, or MaxEventsAnswer; a log entry's events are
// never split), and the index to pass next time (see fsm.Machine.Events).
// It serves what this node has applied, on any node, without a leader. An
// error wrapping ErrCompacted (an *fsm.CompactedError) means the history
// starts after after: the reader missed events and must resynchronise from
// a list.
func (n *Node) Events(after uint64, f fsm.EventFilter, limit int) ([]fsm.Event, uint64, error) {
	if limit <= 0 || limit > MaxEventsAnswer {
		limit = MaxEventsAnswer
	}
	if len(f.Prefix) > fsm.MaxKeyLen {
		return nil, 0, invalid("prefix", "%d bytes, the limit is %d", len(f.Prefix), fsm.MaxKeyLen)
	}
	return n.machine.Events(after, f, limit)
}

// EventBase is the index after which this node's history holds every
// event: the oldest index a reader may pass to Events.
func (n *Node) EventBase() uint64 { return n.machine.EventBase() }

// leadingTerm is the term of the node's established leadership; ok is
// false while it has none.
func (n *Node) leadingTerm() (term uint64, ok bool) {
	if p := n.leading.Load(); p != nil {
		return p.term, true
	}
	return 0, false
}
