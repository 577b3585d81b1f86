package docs

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
)

// MetricRow is one row of the metric tables of docs/metrics.md.
type MetricRow struct {
	Name, Type, Labels string
	// Shown says when a server exposes the family: "server", "leader",
	// "follower", or "event" (once what it measures has happened).
	Shown string
}

// metricsHeader starts each metric table of docs/metrics.md.
const metricsHeader = "| Name | Type | Labels | Shown | Meaning |"

// MetricRows reads the rows of the tables of docs/metrics.md (text) whose
// header is | Name | Type | Labels | Shown | Meaning |, in order. A row
// with fewer than five cells, or a name given twice, is an error. The
// deployment checks and the integration tests both read the reference
// through it.
func MetricRows(text []byte) ([]MetricRow, error) {
	var out []MetricRow
	seen := make(map[string]bool)
	inTable := false
	sc := bufio.NewScanner(bytes.NewReader(text))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, metricsHeader):
			inTable = true
			continue
		case !strings.HasPrefix(line, "|"):
			inTable = false
			continue
		case !inTable || strings.HasPrefix(line, "| ---"):
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 5 {
			return nil, fmt.Errorf("metrics table row %q has %d cells, want 5 (name, type, labels, shown, meaning)", line, len(cells))
		}
		row := MetricRow{
			Name:   strings.Trim(strings.TrimSpace(cells[0]), "`"),
			Type:   strings.TrimSpace(cells[1]),
			Labels: strings.TrimSpace(cells[2]),
			Shown:  strings.TrimSpace(cells[3]),
		}
		if seen[row.Name] {
			return nil, fmt.Errorf("metrics table: %s documented twice", row.Name)
		}
		seen[row.Name] = true
		out = append(out, row)
	}
	return out, sc.Err()
}
