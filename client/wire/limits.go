package wire

// MaxRenewBatch is the largest number of leases one RenewMany call may
// carry.
const MaxRenewBatch = 1024

// MaxSnapshotBytes bounds a backup the client reads and a restore the
// server accepts. A million held leases make a snapshot of about 63 MB.
const MaxSnapshotBytes = 512 << 20

// MaxACLChecks is the largest number of checks one Authorize call may
// carry.
const MaxACLChecks = 100
