package placement

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"testing"

	"github.com/tenure-io/tenure/fsm"
)

// Placement is part of the contract: a server that placed differently from
// its predecessor would move keys on an upgrade. These pins fail on any
// change to the weights or to the plans, including an optimisation that
// changes a tie-break.

func TestPlacementScorePinned(t *testing.T) {
	tests := []struct {
		worker, key string
		want        uint64
	}{
		{"worker-00", "partitions/0", 0x8917e87b88005f22},
		{"worker-17", "scene-01", 0x856f334eacdd6e9f},
		{"", "", 0xb9034ad37056f5fb},
		{"a", "b", 0xab78f5eca36d0e2b},
	}
	for _, tt := range tests {
		if got := placementScore(tt.worker, tt.key); got != tt.want {
			t.Errorf("placementScore(%q, %q) = %#x, want %#x", tt.worker, tt.key, got, tt.want)
		}
	}
}

// planDigest is the SHA-256 of the plan's "key=worker" lines in key order.
func planDigest(plan map[string]string) string {
	keys := make([]string, 0, len(plan))
	for k := range plan {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\n", k, plan[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestPlacementPlansPinned(t *testing.T) {
	keys := partitionKeys(600)
	var workers []candidate
	for i := 0; i < 40; i++ {
		w := candidate{id: fmt.Sprintf("worker-%02d", i)}
		switch {
		case i%9 == 0:
			w.capacity = 5
		case i%11 == 0:
			w.keepOnly = true
		}
		workers = append(workers, w)
	}
	control := func(k string) fsm.KeyControl {
		var n int
		fmt.Sscanf(k, "partitions/%d", &n)
		switch {
		case n%97 == 0:
			return fsm.KeyControl{Disabled: true}
		case n%13 == 0:
			return fsm.KeyControl{Prohibited: []string{"worker-01", "worker-02", "worker-03"}}
		}
		return fsm.KeyControl{}
	}
	initial := place(keys, workers, 0, nil, control)
	capped := place(keys, workers, 18, nil, control)
	joined := place(keys, append(workersN(40, 45), workers...), 0, initial, control)
	left := place(keys, workers[7:], 0, initial, control)
	tests := []struct {
		name string
		plan map[string]string
		want string
	}{
		{"initial", initial, "00e50565b826b711826a380228496b9c1bef4f02f499687c55affddd2a906d0c"},
		{"max per worker", capped, "ae6bb713c1297783c9b0d010d077a526686fea794e66d66ee2172e8248a35f2a"},
		{"five joined", joined, "15e3fc5e9e761ea6705b59ea45105a8f4dfebc2ed9946d3da1f62824021c619d"},
		{"seven left", left, "64dc8239ae664fe95ee56abe34bb1a14b75bbb6a57098044de7381cd6d8be871"},
	}
	for _, tt := range tests {
		if got := planDigest(tt.plan); got != tt.want {
			t.Errorf("%s: plan digest %s, want %s", tt.name, got, tt.want)
		}
	}
}
