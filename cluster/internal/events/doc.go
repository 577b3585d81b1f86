// Package events logs the lease events of the replicated event history.
//
// Every lease event of the state machine's history (fsm.Event: acquired,
// released, expired, ending, revoked, handed_off, metadata_changed,
// forgotten) becomes one log line "lease_<type>" with key, holder, token,
// term (of the log entry) and index, plus reason and by when the event has
// them. The lines come from the event history, not from the code that
// proposed the change, so they say what the replicated log holds, with the
// term of the entry that holds it.
//
// Who logs, at which level: every node applies every entry, so each event
// would otherwise be logged once per server. The established leader of a
// term logs the events of the entries of that term (those it proposed):
// expired, ending, revoked, handed_off and metadata_changed at INFO,
// acquired, released and forgotten (they can come by the thousand per
// second) at DEBUG. A follower logs them all at TRACE only. So no event is
// logged twice at INFO; an event of an entry that its leader had not read
// when it lost leadership (it reads them shortly after applying them) is
// logged by no one above TRACE.
//
// The types a level leaves out are not even read from the history, so a
// leader at INFO copies nothing for acquisitions and releases; a follower
// below TRACE reads no events at all. Events applied before the node
// started logging (the log replayed at start) are not logged.
//
// It only reads the history: it must never write to the state machine,
// nor decide who leads (it is told, by the function it is given).
package events
