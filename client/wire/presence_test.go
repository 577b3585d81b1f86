package wire

import (
	"strings"
	"testing"
)

// A presence lease announces its worker only when the key, the holder and
// every field fit; each refusal names what did not.
func TestPresenceMeta(t *testing.T) {
	m, err := PresenceMeta(".workers/w1", "w1#1a2b", map[string]string{"groups": "g, h", "capacity": "3",
		"load_capacity": "12.5", "prepare_ms": "500", "draining": "true"})
	if err != nil || m.ID != "w1" || m.Holder != "w1#1a2b" || len(m.Groups) != 2 || m.Groups[1] != "h" || m.Capacity != 3 ||
		m.LoadCapacity != 12.5 || m.PrepareMS != 500 || !m.Draining || m.Role != "worker" {
		t.Fatalf("PresenceMeta = %+v, %v", m, err)
	}
	for _, tc := range []struct {
		key, holder string
		md          map[string]string
		want        string
	}{
		{"workers/w1", "w1#1", nil, "not .workers/"},
		{".workers/a/b", "a/b#1", nil, "not .workers/"},
		{".workers/w1", "w2#1", nil, "holder"},
		{".workers/w1", "w1", nil, "holder"},
		{".workers/w1", "w1#1", map[string]string{"capacity": "-1"}, "capacity"},
		{".workers/w1", "w1#1", map[string]string{"load_capacity": "1e20"}, "load_capacity"},
		{".workers/w1", "w1#1", map[string]string{"prepare_ms": "soon"}, "prepare_ms"},
	} {
		if _, err := PresenceMeta(tc.key, tc.holder, tc.md); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("PresenceMeta(%q, %q, %v) = %v, want an error naming %q", tc.key, tc.holder, tc.md, err, tc.want)
		}
	}
}
