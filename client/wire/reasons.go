package wire

// Reasons carried by a lease_lost error, and by a free lease to say why it
// is free.
const (
	ReasonExpired    = "expired"
	ReasonReleased   = "released"
	ReasonRevoked    = "revoked"
	ReasonDisabled   = "disabled"   // an operator disabled the key while it was held
	ReasonProhibited = "prohibited" // an operator prohibited the holder on the key
	ReasonSuperseded = "superseded" // held under a newer token or by another holder
	ReasonUnknown    = "unknown"    // the key has no record: never held, or forgotten
	// ReasonNotHolder: the renewal's holder and token never were the key's
	// lease (the current token under another holder, or a token the key
	// never had).
	ReasonNotHolder = "not_holder"
	// ReasonNeverAcquired: a free key of a group that has no lease record
	// (never acquired, or its record forgotten after the servers'
	// -free-key-retention); listed with state=free, token 0, no holder.
	ReasonNeverAcquired = "never_acquired"
)
