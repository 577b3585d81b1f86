package fsm

import "bytes"

// goldenBackupKey is the backup key of the version 6 golden files.
var goldenBackupKey = bytes.Repeat([]byte{0x6b}, BackupKeyLen)

// goldenLogV6 is the log behind snapshot-v6.golden: goldenLogV5, then the
// backup key (index 59), and another key, refused (60).
func goldenLogV6() []entry {
	return append(goldenLogV5(), encodeLog([]termCommand{
		{3, BackupKey{Key: goldenBackupKey}},                          // 59
		{3, BackupKey{Key: bytes.Repeat([]byte{0x01}, BackupKeyLen)}}, // 60: refused
	})...)
}
