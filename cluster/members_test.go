package cluster

import (
	"strings"
	"testing"
)

// The configured size is -bootstrap-expect, or the servers of
// -initial-cluster, or unknown (0).
func TestConfiguredVoters(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want int
	}{
		{name: "bootstrap-expect 3", cfg: Config{BootstrapExpect: 3}, want: 3},
		{name: "single dev node", cfg: Config{BootstrapExpect: 1}, want: 1},
		{name: "initial cluster of five", cfg: Config{InitialCluster: make([]Peer, 5)}, want: 5},
		{name: "a server that joins", cfg: Config{Join: []string{"10.0.0.1:7502"}}, want: 0},
	}
	for _, tt := range tests {
		if got := tt.cfg.Voters(); got != tt.want {
			t.Errorf("%s: Voters() = %d, want %d", tt.name, got, tt.want)
		}
	}
}

func TestClusterNameValidation(t *testing.T) {
	for name, ok := range map[string]bool{
		"tenure": true, "prod-eu-1": true, "a1": true, "A1": false,
		"": false, "-a": false, "a-": false, "a.b": false, "a_b": false, "x y": false,
		"a23456789012345678901234567890123456789012345678901234567890123":  true,
		"a234567890123456789012345678901234567890123456789012345678901234": false,
	} {
		cfg := DefaultConfig()
		cfg.ClusterName = name
		err := cfg.Validate()
		if refused := err != nil && strings.Contains(err.Error(), "cluster-name"); refused == ok {
			t.Errorf("cluster-name %q: got %v, want ok=%v", name, err, ok)
		}
	}
}
