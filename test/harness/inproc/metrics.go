package inproc

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// CounterBy returns the values of the counter name in reg by the value of
// its label label (series without the label are left out); it fails t
// when reg cannot be gathered.
func CounterBy(t testing.TB, reg prometheus.Gatherer, name, label string) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label {
					out[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}
