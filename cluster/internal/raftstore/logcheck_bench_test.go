package raftstore

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	raftboltdb "github.com/hashicorp/raft-boltdb/v2"
	"github.com/tenure-io/tenure/fsm"
)

// BenchmarkCheckLogStore measures the start-up check of a raft.db of
// 100,000 entries (each a group-commit batch of four acquisitions, about
// 250 bytes): the time a server spends before Raft starts. The figure is
// in docs/adr/0001-command-encoding.md.
func BenchmarkCheckLogStore(b *testing.B) {
	for _, oldForm := range []bool{false, true} {
		name := "checksummed"
		if oldForm {
			name = "decoded"
		}
		b.Run(name, func(b *testing.B) {
			dir := b.TempDir()
			store, err := raftboltdb.New(raftboltdb.Options{Path: filepath.Join(dir, "raft.db"), NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			const entries, chunk = 100_000, 1000
			for i := 0; i < entries; i += chunk {
				logs := make([]*raft.Log, chunk)
				for j := range logs {
					idx := uint64(i + j + 1)
					cmds := make([]fsm.Command, 4)
					for k := range cmds {
						cmds[k] = fsm.Acquire{Key: fmt.Sprintf("partitions/%d", (int(idx)*4+k)%1024), Holder: "worker-17-4242-1a2b3c4d",
							TTL: 15 * time.Second, Time: 1_700_000_000_000_000_000 + int64(idx)}
					}
					data := fsm.Encode(fsm.Batch{Commands: cmds})
					if oldForm { // as written before checksums: version 1, no CRC
						data = data[:len(data)-4]
						data[1] = 1
					}
					logs[j] = &raft.Log{Index: idx, Term: 1, Type: raft.LogCommand, Data: data}
				}
				if err := store.StoreLogs(logs); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := CheckLogStore(store, dir, "n1"); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/entries, "ns/entry")
		})
	}
}
