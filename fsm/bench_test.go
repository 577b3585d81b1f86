package fsm

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"github.com/hashicorp/raft"
)

// go test ./fsm -run XXX -bench . -benchmem

// BenchmarkApplyAcquire applies one Acquire per log entry, decoding
// included, for each outcome.
func BenchmarkApplyAcquire(b *testing.B) {
	b.Run("granted", func(b *testing.B) {
		const pool = 4096
		acquires := make([][]byte, pool)
		revokes := make([]Command, pool)
		for i := range acquires {
			key := fmt.Sprintf("partitions/%d", i)
			acquires[i] = Encode(Acquire{Key: key, Holder: "worker-17-4242-1a2b3c4d", TTL: ttl, Time: wall})
			revokes[i] = Revoke{Key: key}
		}
		freeAll := Encode(Batch{Commands: revokes})
		m := New()
		log := &raft.Log{Term: 1, Type: raft.LogCommand}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if i%pool == 0 && i > 0 {
				b.StopTimer()
				log.Index++
				log.Data = freeAll
				m.Apply(log)
				b.StartTimer()
			}
			log.Index++
			log.Data = acquires[i%pool]
			if r := m.Apply(log).(Result); r.Code != Granted {
				b.Fatalf("iteration %d: %v", i, r.Code)
			}
		}
	})
	for _, bc := range []struct {
		name   string
		holder string
		want   Code
	}{
		{"kept", "worker-17-4242-1a2b3c4d", Kept},
		{"held", "worker-18-4242-1a2b3c4d", Held},
	} {
		b.Run(bc.name, func(b *testing.B) {
			m := New()
			m.Apply(logEntry(1, 1, Acquire{Key: "partitions/1", Holder: "worker-17-4242-1a2b3c4d", TTL: ttl, Time: wall}))
			log := &raft.Log{Index: 1, Term: 1, Type: raft.LogCommand,
				Data: Encode(Acquire{Key: "partitions/1", Holder: bc.holder, TTL: ttl, Time: wall})}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				log.Index++
				if r := m.Apply(log).(Result); r.Code != bc.want {
					b.Fatalf("iteration %d: %v, want %v", i, r.Code, bc.want)
				}
			}
		})
	}
}

// BenchmarkApplyBatch64 applies batches of 32 acquires and the 32 releases
// of those leases: one group-committed log entry of 64 commands.
func BenchmarkApplyBatch64(b *testing.B) {
	const (
		half   = 32
		cycle  = 128 // batches encoded ahead; then the machine starts over
		holder = "worker-17-4242-1a2b3c4d"
	)
	keys := make([]string, half)
	warm := make([]Command, 0, 2*half)
	for j := range keys {
		keys[j] = fmt.Sprintf("partitions/%d", j)
		warm = append(warm, acquire(keys[j], holder), Revoke{Key: keys[j]})
	}
	warmEntry := Encode(Batch{Commands: warm}) // takes tokens 1…32
	batches := make([][]byte, cycle)
	for i := range batches {
		cmds := make([]Command, 0, 2*half)
		for _, key := range keys {
			cmds = append(cmds, Acquire{Key: key, Holder: holder, TTL: ttl, Time: wall})
		}
		for j, key := range keys {
			cmds = append(cmds, Release{Key: key, Holder: holder, Token: uint64(half + i*half + j + 1)})
		}
		batches[i] = Encode(Batch{Commands: cmds})
	}
	fresh := func() *Machine {
		m := New()
		m.Apply(&raft.Log{Index: 1, Term: 1, Type: raft.LogCommand, Data: warmEntry})
		return m
	}
	m := fresh()
	log := &raft.Log{Index: 1, Term: 1, Type: raft.LogCommand}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%cycle == 0 && i > 0 {
			b.StopTimer()
			m = fresh()
			log.Index = 1
			b.StartTimer()
		}
		log.Index++
		log.Data = batches[i%cycle]
		rs := m.Apply(log).([]Result)
		if rs[0].Code != Granted || rs[2*half-1].Code != Freed {
			b.Fatalf("iteration %d: first %v, last %v", i, rs[0].Code, rs[2*half-1].Code)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(2*half), "ns/command")
}

// benchMachine holds n leases, a third of them free, a quarter with
// metadata, as a long-running cluster would.
func benchMachine(b *testing.B, n int) *Machine {
	b.Helper()
	m := New()
	cmds := make([]Command, 0, n)
	for i := 0; i < n; i++ {
		a := Acquire{Key: fmt.Sprintf("partitions/%d", i), Holder: fmt.Sprintf("worker-%d-4242-1a2b3c4d", i%50), TTL: ttl, Time: wall + int64(i)}
		if i%4 == 0 {
			a.Metadata = map[string]string{"zone": fmt.Sprintf("eu-%d", i%3), "slot": fmt.Sprint(i)}
		}
		cmds = append(cmds, a)
		if i%3 == 0 {
			cmds = append(cmds, Revoke{Key: a.Key})
		}
	}
	for i := 0; i < len(cmds); i += 1000 {
		m.Apply(logEntry(uint64(i/1000+1), 1, Batch{Commands: cmds[i:min(i+1000, len(cmds))]}))
	}
	if leases, _ := m.List(Filter{}); len(leases) != n {
		b.Fatalf("%d leases, want %d", len(leases), n)
	}
	return m
}

// BenchmarkSnapshot measures a snapshot of 10k leases: capture (Snapshot,
// which blocks Apply), persist (encoding and writing, concurrent with
// Apply), and restore.
func BenchmarkSnapshot(b *testing.B) {
	m := benchMachine(b, 10_000)
	data := persist(b, m)

	b.Run("capture", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			s, err := m.Snapshot()
			if err != nil {
				b.Fatal(err)
			}
			s.Release()
		}
	})
	b.Run("persist", func(b *testing.B) {
		sink := &fakeSink{}
		sink.Grow(len(data))
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			sink.Reset()
			s, err := m.Snapshot()
			if err != nil {
				b.Fatal(err)
			}
			if err := s.Persist(sink); err != nil {
				b.Fatal(err)
			}
			s.Release()
		}
	})
	b.Run("restore", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if err := New().Restore(io.NopCloser(bytes.NewReader(data))); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	batch := make([]Command, 64)
	for i := range batch {
		batch[i] = Release{Key: fmt.Sprintf("partitions/%d", i), Holder: "worker-17-4242-1a2b3c4d", Token: uint64(1000 + i)}
	}
	for _, bc := range []struct {
		name string
		cmd  Command
	}{
		{"acquire", Acquire{Key: "partitions/17", Holder: "worker-17-4242-1a2b3c4d", TTL: ttl, Time: wall}},
		{"acquire-metadata", Acquire{Key: "partitions/17", Holder: "worker-17-4242-1a2b3c4d", TTL: ttl,
			Metadata: map[string]string{"zone": "eu-1", "version": "1.4.2"}, Time: wall}},
		{"release", Release{Key: "partitions/17", Holder: "worker-17-4242-1a2b3c4d", Token: 123456}},
		{"expire", Expire{Key: "partitions/17", Token: 123456, Term: 7}},
		{"batch64", Batch{Commands: batch}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			data := Encode(bc.cmd)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				if _, err := Decode(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
