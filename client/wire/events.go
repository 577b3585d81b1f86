package wire

// Event types (Event.Type): every applied change of a lease, a group, a
// key control or a worker's drain mark. Renewals are not events.
const (
	EventAcquired       = "acquired"
	EventReleased       = "released"
	EventExpired        = "expired"
	EventRevoked        = "revoked"
	EventHandedOff      = "handed_off"
	EventGroupChanged   = "group_changed"
	EventAssigned       = "assigned"
	EventControlChanged = "control_changed"
	EventDrained        = "drained"
	// EventMetadataChanged: the holder re-acquired its lease with other
	// metadata.
	EventMetadataChanged = "metadata_changed"
	// EventForgotten: the record of a key free for longer than the
	// server's retention was deleted.
	EventForgotten = "forgotten"
	// EventStuck: a worker of a group was marked stuck (Reason "stuck") or
	// let back ("unstuck").
	EventStuck = "stuck"
	// EventEnding: an operator revoked, disabled or prohibited a lease
	// without force (Reason says which): the holder's renewals are refused
	// and the key frees (EventRevoked) when its deadline passes.
	EventEnding = "ending"
)

// EventTypes returns every event type, in the order the API documents
// them.
func EventTypes() []string {
	return []string{EventAcquired, EventReleased, EventExpired, EventRevoked, EventHandedOff, EventGroupChanged,
		EventAssigned, EventControlChanged, EventDrained, EventMetadataChanged, EventForgotten, EventStuck, EventEnding}
}
