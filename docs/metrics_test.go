package docs

import (
	"os"
	"strings"
	"testing"
)

// The reference's tables read as rows with their type and when they are
// shown; a short row or a name given twice is refused, not skipped.
func TestMetricRows(t *testing.T) {
	text, err := os.ReadFile("metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := MetricRows(text)
	if err != nil {
		t.Fatalf("docs/metrics.md: %v", err)
	}
	var found bool
	for _, r := range rows {
		if r.Name == "tenure_http_requests_total" {
			found = r.Type == "counter" && strings.Contains(r.Labels, "route") && r.Shown == "server"
		}
	}
	if len(rows) < 100 || !found {
		t.Errorf("docs/metrics.md: %d rows, tenure_http_requests_total as a counter by route shown on every server: %v", len(rows), found)
	}
	header := "| Name | Type | Labels | Shown | Meaning |\n|---|---|---|---|---|\n"
	for name, table := range map[string]string{
		"short row": header + "| `a` | counter | – |\n",
		"twice":     header + "| `a` | counter | – | server | x |\n| `a` | gauge | – | server | y |\n",
	} {
		if _, err := MetricRows([]byte(table)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
