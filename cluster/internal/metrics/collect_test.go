package metrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/tenure-io/tenure/cluster/internal/membership"
	"github.com/tenure-io/tenure/cluster/internal/views"
	"github.com/tenure-io/tenure/fsm"
)

// source is a node's state held in fields.
type source struct {
	groups  []*fsm.Group
	leases  map[string]*fsm.Lease
	workers []membership.Member
	oldest  map[string]time.Duration
	// controls, when set, are the keys' controls; else only "off" is
	// disabled. refused are the workers not admitted.
	controls map[string]fsm.KeyControl
	refused  map[string]bool
	// relative are the relative loads of the workers, by group.
	relative map[string]map[string]float64
}

func (s *source) Node() Node {
	return Node{Held: 2, Free: 1, Leader: true, LastIndex: 9, Commit: 8, Applied: 7, Term: 3, Deadlines: 2, LastToken: 5, Waiting: 1}
}
func (s *source) Health() views.NodeHealth {
	return views.NodeHealth{Problem: "disk", DiskWriteErrors: 1, BehindEntries: 4, BehindFor: 2 * time.Second}
}
func (s *source) Disk() Disk { return Disk{DataDir: "/no/such/dir"} }
func (s *source) Conns() []Conns {
	return []Conns{{Port: "raft", Open: 3, Refused: 1}}
}
func (s *source) Groups() ([]*fsm.Group, uint64) { return s.groups, 1 }
func (s *source) Get(key string) *fsm.Lease      { return s.leases[key] }
func (s *source) Control(key string) fsm.KeyControl {
	if s.controls != nil {
		return s.controls[key]
	}
	return fsm.KeyControl{Disabled: key == "off"}
}
func (s *source) Admits(worker, group string) bool { return !s.refused[worker] }
func (s *source) Drained(worker string) bool       { return worker == "w3" }
func (s *source) Workers() []membership.Member     { return s.workers }
func (s *source) RelativeLoads(g *fsm.Group, _ []membership.Member) map[string]float64 {
	return s.relative[g.Name]
}
func (s *source) OldestUnowned() map[string]time.Duration {
	return s.oldest
}

// The collectors read the node at scrape time and expose what it holds
// under the documented names.
func TestCollectorsReadTheSource(t *testing.T) {
	src := &source{
		groups: []*fsm.Group{{Name: "g", Keys: []string{"a", "b", "c", "d", "off"}, MaxPerWorker: 3,
			Assignment: map[string]string{"a": "w1", "b": "w1", "c": "w2", "d": "w2"}}},
		leases: map[string]*fsm.Lease{
			"a": {Key: "a", Held: true, Holder: "w1#1"},
			"b": {Key: "b", Held: true, Holder: "w1#1"},
			"c": {Key: "c", Held: true, Holder: "old"},
		},
		workers: []membership.Member{{Meta: membership.MemberMeta{ID: "w1", Groups: []string{"g"}}}, {Meta: membership.MemberMeta{ID: "w2", Groups: []string{"g"}, Draining: true}},
			{Meta: membership.MemberMeta{ID: "w3", Groups: []string{"g"}}}, {Meta: membership.MemberMeta{ID: "w4", Groups: []string{"other"}}}},
		oldest:   map[string]time.Duration{"g": 1500 * time.Millisecond},
		relative: map[string]map[string]float64{"g": {"w1": 1.5, "w3": 0.5}},
	}
	reg := prometheus.NewPedanticRegistry()
	m := New(Config{Registerer: reg, Source: src, LogSources: []string{"memberlist"}})
	m.Acquisitions.Inc()
	got := gather(t, reg)
	wantSeries(t, got, map[string]float64{
		"tenure_acquisitions_total":                                1,
		`tenure_group_keys{group="g",state="owned_by_other"}`:      1,
		`tenure_group_keys{group="g",state="owned_by_target"}`:     2,
		`tenure_group_keys{group="g",state="unowned"}`:             1,
		`tenure_group_draining_workers{group="g"}`:                 2,
		`tenure_group_workers{group="g"}`:                          3,
		`tenure_group_max_keys_per_worker{group="g"}`:              3,
		`tenure_group_busiest_worker_keys{group="g"}`:              2,
		`tenure_group_oldest_unowned_seconds{group="g"}`:           1.5,
		`tenure_group_worker_relative_load{group="g",worker="w1"}`: 1.5,
		`tenure_group_worker_relative_load{group="g",worker="w3"}`: 0.5,
		`tenure_group_load_imbalance{group="g"}`:                   1.5,
		"tenure_is_leader":                                         1,
		`tenure_raft_index{kind="applied"}`:                        7,
		`tenure_raft_index{kind="last_log"}`:                       9,
		"tenure_raft_term":                                         3,
		"tenure_node_healthy":                                      0,
		"tenure_disk_write_errors_total":                           1,
		"tenure_replication_lag_seconds":                           2,
		`tenure_inbound_connections{port="raft"}`:                  3,
		`tenure_inbound_connections_refused_total{port="raft"}`:    1,
		`tenure_leases{state="free"}`:                              1,
		`tenure_leases{state="held"}`:                              2,
		`tenure_log_lines_suppressed_total{source="memberlist"}`:   0,
	})
	// No snapshot and no file system: the disk metrics are absent.
	for _, series := range []string{"tenure_raft_last_snapshot_index", "tenure_data_dir_free_bytes"} {
		if v, ok := got[series]; ok {
			t.Errorf("%s = %v, want absent", series, v)
		}
	}
}

// A group's disabled keys and keys that prohibit holders are counted, and
// so are the workers that may be given keys against the group's minimum:
// the controls people forget and a group below its minimum can be alerted
// on.
func TestGroupControlsAndMinimumAreCounted(t *testing.T) {
	src := &source{
		groups: []*fsm.Group{{Name: "g", Keys: []string{"a", "b", "c", "d"}, MinWorkers: 4, Stuck: []string{"w4"}}},
		controls: map[string]fsm.KeyControl{
			"a": {Disabled: true},
			"b": {Disabled: true, Prohibited: []string{"w1"}},
			"c": {Prohibited: []string{"w1", "w2"}},
		},
		workers: []membership.Member{{Meta: membership.MemberMeta{ID: "w1", Groups: []string{"g"}}}, {Meta: membership.MemberMeta{ID: "w1", Groups: []string{"g"}}},
			{Meta: membership.MemberMeta{ID: "w2", Groups: []string{"g"}, Draining: true}}, {Meta: membership.MemberMeta{ID: "w3", Groups: []string{"g"}}},
			{Meta: membership.MemberMeta{ID: "w4", Groups: []string{"g"}}}, {Meta: membership.MemberMeta{ID: "w5", Groups: []string{"g"}}}, {Meta: membership.MemberMeta{ID: "w6", Groups: []string{"other"}}}},
		refused: map[string]bool{"w5": true},
	}
	reg := prometheus.NewPedanticRegistry()
	New(Config{Registerer: reg, Source: src})
	got := gather(t, reg)
	wantSeries(t, got, map[string]float64{
		`tenure_group_disabled_keys{group="g"}`:   2,
		`tenure_group_prohibited_keys{group="g"}`: 2,
		`tenure_group_min_workers{group="g"}`:     4,
		// w1 (announced twice, counted once); not w2 (draining), w3
		// (drained), w4 (stuck), w5 (not admitted) or w6 (another group).
		`tenure_group_eligible_workers{group="g"}`: 1,
	})
}

// wantSeries fails t for each series of want that got lacks or holds
// with another value.
func wantSeries(t *testing.T, got, want map[string]float64) {
	t.Helper()
	for series, w := range want {
		if v, ok := got[series]; !ok || v != w {
			t.Errorf("%s = %v (present %t), want %v", series, v, ok, w)
		}
	}
}

// gather returns the value of every series reg collects, by name and
// labels in the exposition format.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	out := make(map[string]float64)
	for _, f := range families {
		for _, m := range f.GetMetric() {
			name := f.GetName()
			if len(m.GetLabel()) > 0 {
				var labels []string
				for _, l := range m.GetLabel() {
					labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
				}
				name += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.Gauge != nil:
				out[name] = m.GetGauge().GetValue()
			case m.Counter != nil:
				out[name] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}
