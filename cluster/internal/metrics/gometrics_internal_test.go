package metrics

import (
	"strings"
	"testing"

	gometrics "github.com/hashicorp/go-metrics/compat"
	"github.com/prometheus/client_golang/prometheus"
)

func TestSnakeCase(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"apply", "apply"},
		{"appendEntries", "append_entries"},
		{"getRPCType", "get_rpc_type"},
		{"heartbeat_timeout", "heartbeat_timeout"},
		{"rpcType", "rpc_type"},
		{"peer_id", "peer_id"},
		{"preElectSelf", "pre_elect_self"},
	} {
		if got := snakeCase(tt.in); got != tt.want {
			t.Errorf("snakeCase(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// What Raft reports through go-metrics comes out under conventional
// names: the peer as a label (its copy with the id in the key dropped),
// milliseconds as seconds, counters with _total, unknown keys dropped.
func TestGoMetricsSinkTranslates(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	s, err := NewGoMetricsSink(reg)
	if err != nil {
		t.Fatalf("NewGoMetricsSink: %v", err)
	}
	peer := []gometrics.Label{{Name: "peer_id", Value: "server-b"}}
	s.AddSampleWithLabels([]string{"tenure", "raft", "replication", "appendEntries", "rpc"}, 250, peer)
	s.AddSample([]string{"tenure", "raft", "replication", "appendEntries", "rpc", "server-b"}, 250)
	s.IncrCounterWithLabels([]string{"tenure", "raft", "replication", "appendEntries", "logs"}, 3, peer)
	s.IncrCounter([]string{"tenure", "raft", "replication", "appendEntries", "logs", "server-b"}, 3)
	s.IncrCounter([]string{"tenure", "raft", "state", "leader"}, 1)
	s.AddSampleWithLabels([]string{"tenure", "raft", "net", "rpcDecode"}, 2, []gometrics.Label{{Name: "rpcType", Value: "AppendEntries"}})
	s.SetGauge([]string{"tenure", "raft", "peers"}, 3)
	s.SetGauge([]string{"tenure", "raft", "fsm", "lastRestoreDuration"}, 1500)
	s.IncrCounter([]string{"tenure", "raft", "no", "such", "key"}, 1)
	s.AddSample([]string{"tenure", "raft", "boltdb", "logSize"}, 100)

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	got := make(map[string]bool)
	wantValue := map[string]float64{
		"tenure_raft_replication_append_entries_logs_total": 3,
		"tenure_raft_state_leader_total":                    1,
		"tenure_raft_peers":                                 3,
		"tenure_raft_fsm_last_restore_duration_seconds":     1.5, // 1500ms
	}
	for _, mf := range mfs {
		got[mf.GetName()] = true
		if want, ok := wantValue[mf.GetName()]; ok {
			m := mf.GetMetric()
			var v float64
			if len(m) == 1 {
				v = m[0].GetCounter().GetValue() + m[0].GetGauge().GetValue()
			}
			if len(m) != 1 || v != want {
				t.Errorf("%s: %d series, value %v; want one of %v", mf.GetName(), len(m), v, want)
			}
		}
		if strings.Contains(mf.GetName(), "server_b") || strings.Contains(mf.GetName(), "server-b") {
			t.Errorf("%s: the peer's id is in the name", mf.GetName())
		}
		switch mf.GetName() {
		case "tenure_raft_replication_append_entries_rpc_seconds":
			m := mf.GetMetric()
			if len(m) != 1 {
				t.Fatalf("%s: %d series, want 1 (the copy with the id in the key dropped)", mf.GetName(), len(m))
			}
			if h := m[0].GetHistogram(); h.GetSampleCount() != 1 || h.GetSampleSum() != 0.25 {
				t.Errorf("%s: count %d sum %v, want 1 and 0.25 (250ms)", mf.GetName(), h.GetSampleCount(), h.GetSampleSum())
			}
			if l := m[0].GetLabel(); len(l) != 1 || l[0].GetName() != "peer" || l[0].GetValue() != "server-b" {
				t.Errorf("%s: labels %v, want peer=server-b", mf.GetName(), l)
			}
		case "tenure_raft_net_rpc_decode_seconds":
			if l := mf.GetMetric()[0].GetLabel(); len(l) != 1 || l[0].GetName() != "rpc_type" {
				t.Errorf("%s: labels %v, want rpc_type", mf.GetName(), l)
			}
		case "tenure_raft_boltdb_log_size_bytes":
			if h := mf.GetMetric()[0].GetHistogram(); h.GetSampleSum() != 100 {
				t.Errorf("%s: sum %v, want 100 (bytes, not scaled)", mf.GetName(), h.GetSampleSum())
			}
		}
	}
	for _, name := range []string{"tenure_raft_replication_append_entries_logs_total", "tenure_raft_state_leader_total", "tenure_raft_peers", "tenure_raft_fsm_last_restore_duration_seconds", "tenure_raft_replication_append_entries_rpc_seconds", "tenure_raft_net_rpc_decode_seconds", "tenure_raft_boltdb_log_size_bytes", "tenure_raft_restore_total", "tenure_raft_snapshot_create_seconds"} {
		if !got[name] {
			t.Errorf("%s: not gathered", name)
		}
	}
	for name := range got {
		if strings.Contains(name, "no_such_key") {
			t.Errorf("%s: an unknown key was exposed", name)
		}
	}
}

// Every name the sink can expose is a conventional Prometheus name.
func TestGoMetricsKeyNames(t *testing.T) {
	seen := make(map[string]string)
	for _, d := range goMetricsKeys {
		name := goMetricName(d.key, d.kind, d.unit)
		if prev, dup := seen[name]; dup {
			t.Errorf("%s and %s are both %s", prev, d.key, name)
		}
		seen[name] = d.key
		for _, c := range name {
			if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
				t.Errorf("%s (%s): %q is not allowed in a name", name, d.key, c)
			}
		}
		if (d.kind == goCounter) != strings.HasSuffix(name, "_total") {
			t.Errorf("%s (%s): counters, and only counters, end in _total", name, d.key)
		}
		if d.help == "" {
			t.Errorf("%s: no help", name)
		}
	}
}

// RetainPeers drops the per-peer series of servers that left the
// configuration, and only those, and keeps them out until a configuration
// names the server again.
func TestGoMetricsSinkRetainPeers(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	s, err := NewGoMetricsSink(reg)
	if err != nil {
		t.Fatalf("NewGoMetricsSink: %v", err)
	}
	replicate := func(peer string) {
		l := []gometrics.Label{{Name: "peer_id", Value: peer}}
		s.AddSampleWithLabels([]string{"tenure", "raft", "replication", "heartbeat"}, 1, l)
		s.IncrCounterWithLabels([]string{"tenure", "raft", "replication", "appendEntries", "logs"}, 1, l)
	}
	peers := func() map[string]int {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatalf("gather: %v", err)
		}
		out := map[string]int{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "peer" {
						out[l.GetValue()]++
					}
				}
			}
		}
		return out
	}
	replicate("b")
	replicate("c")
	if got := peers(); got["b"] != 2 || got["c"] != 2 {
		t.Fatalf("series by peer before: %v, want 2 each of b and c", got)
	}
	s.RetainPeers([]string{"a", "b"})
	if got := peers(); got["b"] != 2 || got["c"] != 0 {
		t.Errorf("series by peer after c left the configuration: %v, want b's 2 and none of c", got)
	}
	// Raft may still report a last RPC to c after its removal
	// committed: that brings no series back.
	replicate("c")
	if got := peers(); got["c"] != 0 {
		t.Errorf("series by peer after a late report of the removed c: %v, want none of c", got)
	}
	s.RetainPeers([]string{"a", "b", "c"})
	replicate("c")
	if got := peers(); got["b"] != 2 || got["c"] != 2 {
		t.Errorf("series by peer after c was readmitted: %v, want b's 2 and c's 2 again", got)
	}
}

// BenchmarkGoMetricsSink measures what Raft's metrics cost on its commit
// and replication paths: a labelled sample per AppendEntries RPC to a
// peer, and a plain counter (README, Performance).
func BenchmarkGoMetricsSink(b *testing.B) {
	s, err := NewGoMetricsSink(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	peer := []gometrics.Label{{Name: "peer_id", Value: "server-b"}}
	rpc := []string{"tenure", "raft", "replication", "appendEntries", "rpc"}
	commits := []string{"tenure", "raft", "apply"}
	b.Run("peer sample", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.AddSampleWithLabels(rpc, 1.5, peer)
		}
	})
	b.Run("counter", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s.IncrCounter(commits, 1)
		}
	})
}
