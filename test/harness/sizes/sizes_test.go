package sizes

import (
	"slices"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	got, err := Parse("scale", "10000, 200000,1000000")
	if err != nil || !slices.Equal(got, []int{10000, 200000, 1000000}) {
		t.Fatalf("Parse = %v, %v", got, err)
	}
	for _, bad := range []string{"", "0", "-5", "10k", "1,,2"} {
		if _, err := Parse("scale", bad); err == nil || !strings.Contains(err.Error(), "-scale") {
			t.Errorf("Parse(%q) = %v, want an error naming -scale", bad, err)
		}
	}
}
