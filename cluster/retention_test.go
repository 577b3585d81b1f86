package cluster

import (
	"strings"
	"testing"
	"time"
)

func TestConfigFreeKeyRetention(t *testing.T) {
	cfg := DefaultConfig()
	if cfg.FreeKeyRetention != 24*time.Hour {
		t.Errorf("default free-key-retention = %v, want 24h", cfg.FreeKeyRetention)
	}
	cfg.NodeID, cfg.DataDir = "n1", t.TempDir()
	cfg.FreeKeyRetention = -time.Second
	err := cfg.Validate()
	if err == nil || !strings.Contains(err.Error(), "free-key-retention: -1s is negative") {
		t.Errorf("Validate with a negative retention = %v, want an error naming free-key-retention", err)
	}
}
