package fsm

import "bytes"

// goldenBackupKey is the backup key of the version 7 golden files.
var goldenBackupKey = bytes.Repeat([]byte{0x6b}, BackupKeyLen)

// goldenLogV7 is the log behind snapshot-v7.golden: goldenLogV6, then the
// backup key (index 64), and another key, refused (65).
func goldenLogV7() []entry {
	return append(goldenLogV6(), encodeLog([]termCommand{
		{3, BackupKey{Key: goldenBackupKey}},                          // 64
		{3, BackupKey{Key: bytes.Repeat([]byte{0x01}, BackupKeyLen)}}, // 65: refused
	})...)
}
