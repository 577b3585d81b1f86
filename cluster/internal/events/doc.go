// Package events logs the lease events of the replicated event history.
//
// Its Logger follows the state machine's event history and writes one log
// line per lease event, at a level that depends on whether this node leads
// the term of the entry that holds it, so that no event is logged twice at
// INFO across the servers.
//
// It only reads the history: it must never write to the state machine,
// nor decide who leads (it is told, by the function it is given).
package events
