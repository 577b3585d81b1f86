package backup

import "github.com/tenure-io/tenure/fsm"

// KeepEveryRecord keeps every record: held leases stay with their holder,
// and a free key whose last token is higher than the backup's comes back
// free with it, so that a key's tokens never go backwards.
func KeepEveryRecord(running []*fsm.Lease) []*fsm.Lease { return running }

// KeepHeldOnly keeps only the held leases: a key that was held in the
// backup and changed hands since, and is free now, goes back to the
// backup's holder with the backup's (lower) token. The behaviour of
// builds before KeepEveryRecord, and the negative control of the fault
// suite (unsafe_restore_on.go); never a release.
func KeepHeldOnly(running []*fsm.Lease) []*fsm.Lease {
	var held []*fsm.Lease
	for _, l := range running {
		if l.Held {
			held = append(held, l)
		}
	}
	return held
}
