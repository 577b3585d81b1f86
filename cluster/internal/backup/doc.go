// Package backup owns a server's backup files and the restore policy:
// the names and listing of the backups in a backup directory (List), the
// leader's scheduled backups with their rotation (Schedule), and which
// key records of the running state a restore keeps (Keeps).
//
// It takes the backup itself, the leadership and the durable write as
// function values, and never proposes, restores or reads Raft state: a
// restore runs on the leader (cluster.Node.RestoreSnapshot), which asks
// Keeps what to keep. Keeps must never give a key a token lower than its
// last one: only the fault suite's negative control
// (tenure_unsafe_restore) does.
package backup
