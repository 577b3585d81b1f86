//go:build linux

package netns

import "testing"

func TestSetupRejectsBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Prefix: "", Subnet: "10.201.7", Nodes: []string{"n1"}},
		{Prefix: "tnj/x", Subnet: "10.201.7", Nodes: []string{"n1"}},
		{Prefix: "tnjx", Subnet: "10.201", Nodes: []string{"n1"}},
		{Prefix: "tnjx", Subnet: "10.201.7.0", Nodes: []string{"n1"}},
		{Prefix: "tnjx", Subnet: "10.201.7"},
		{Prefix: "tnjx", Subnet: "10.201.7", Nodes: []string{"n1", "n1"}},
		{Prefix: "tnjx", Subnet: "10.201.7", Nodes: []string{"hub"}},
		{Prefix: "tnjx", Subnet: "10.201.7", Nodes: []string{"a:b"}},
	} {
		if _, err := Setup(cfg); err == nil {
			t.Errorf("Setup(%+v) succeeded", cfg)
		}
	}
}
