package main

import (
	"runtime"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// tenure_build_info is 1 with the version and revision set at build time
// and the Go version of the binary.
func TestBuildInfo(t *testing.T) {
	oldVersion, oldRevision := version, revision
	defer func() { version, revision = oldVersion, oldRevision }()
	version, revision = "v1.2.3", "abc123"

	reg := prometheus.NewRegistry()
	reg.MustRegister(buildInfo())
	families, err := reg.Gather()
	if err != nil || len(families) != 1 || families[0].GetName() != "tenure_build_info" || len(families[0].GetMetric()) != 1 {
		t.Fatalf("gathered %v, %v; want one tenure_build_info", families, err)
	}
	m := families[0].GetMetric()[0]
	if m.GetGauge().GetValue() != 1 {
		t.Errorf("tenure_build_info = %v, want 1", m.GetGauge().GetValue())
	}
	want := map[string]string{"version": "v1.2.3", "revision": "abc123", "goversion": runtime.Version()}
	got := map[string]string{}
	for _, l := range m.GetLabel() {
		got[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("label %s = %q, want %q (labels %v)", k, got[k], v, got)
		}
	}
}
