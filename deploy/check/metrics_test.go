package check

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/tenure-io/tenure/docs"
)

var (
	docsMetrics = filepath.Join("..", "..", "docs", "metrics.md")
	alertRules  = filepath.Join("..", "prometheus", "alerts.yml")
	dashboards  = filepath.Join("..", "grafana")
)

// documentedMetrics reads the metric names of the tables of
// docs/metrics.md (header | Name | Type | Labels | Shown | Meaning |), and
// the series names each one exposes: a histogram's _bucket, _sum and
// _count as well.
func documentedMetrics(path string) (map[string]bool, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rows, err := docs.MetricRows(text)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := make(map[string]bool)
	for _, r := range rows {
		out[r.Name] = true
		if r.Type == "histogram" || r.Type == "summary" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				out[r.Name+s] = true
			}
		}
	}
	return out, nil
}

// metricsOf returns the metric names an expression selects.
func metricsOf(expr string) ([]string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name == "" {
			name = "(a selector without a metric name)"
		}
		names = append(names, name)
		return nil
	})
	return names, nil
}

// undocumented returns the metrics of expr that docs does not list.
func undocumented(expr string, docs map[string]bool) ([]string, error) {
	names, err := metricsOf(expr)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, n := range names {
		if !docs[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// checkRules parses a rules file in Prometheus' format (its rules, their
// PromQL and templates) and returns every problem, also every metric an
// expression uses that docs does not list.
func checkRules(path string, docs map[string]bool) []error {
	rgs, errs := rulefmt.ParseFile(path, false, model.LegacyValidation, parser.NewParser(parser.Options{}), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if len(errs) > 0 {
		return errs
	}
	var out []error
	rules := 0
	for _, g := range rgs.Groups {
		for _, r := range g.Rules {
			rules++
			name := r.Alert + r.Record
			missing, err := undocumented(r.Expr, docs)
			if err != nil {
				out = append(out, fmt.Errorf("%s: %s: %w", path, name, err))
			}
			for _, m := range missing {
				out = append(out, fmt.Errorf("%s: %s uses %s, which docs/metrics.md does not document", path, name, m))
			}
		}
	}
	if rules == 0 {
		out = append(out, fmt.Errorf("%s: no rules", path))
	}
	return out
}

// grafanaIntervals are Grafana's interval variables, replaced by a
// duration so that an expression parses as PromQL.
var grafanaIntervals = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// dashboardExprs returns the "expr" of every target of a Grafana
// dashboard, in rows too.
func dashboardExprs(v any) []string {
	var out []string
	switch v := v.(type) {
	case map[string]any:
		if e, ok := v["expr"].(string); ok {
			out = append(out, e)
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			out = append(out, dashboardExprs(v[k])...)
		}
	case []any:
		for _, x := range v {
			out = append(out, dashboardExprs(x)...)
		}
	}
	return out
}

// checkDashboard parses a Grafana dashboard (JSON, with a title and
// panels) and the PromQL of its targets, and returns every problem, also
// every metric a target uses that docs does not list.
func checkDashboard(path string, docs map[string]bool) []error {
	text, err := os.ReadFile(path)
	if err != nil {
		return []error{err}
	}
	var dash map[string]any
	if err := json.Unmarshal(text, &dash); err != nil {
		return []error{fmt.Errorf("%s: %w", path, err)}
	}
	if t, _ := dash["title"].(string); t == "" {
		return []error{fmt.Errorf("%s: no title", path)}
	}
	exprs := dashboardExprs(dash["panels"])
	if len(exprs) == 0 {
		return []error{fmt.Errorf("%s: no panel has a query", path)}
	}
	var out []error
	for _, e := range exprs {
		missing, err := undocumented(grafanaIntervals.Replace(e), docs)
		if err != nil {
			out = append(out, fmt.Errorf("%s: %q: %w", path, e, err))
		}
		for _, m := range missing {
			out = append(out, fmt.Errorf("%s: %q uses %s, which docs/metrics.md does not document", path, e, m))
		}
	}
	return out
}

// The alerting rules parse as Prometheus rules with valid PromQL, and use
// only documented metrics.
func TestAlertRules(t *testing.T) {
	docs, err := documentedMetrics(docsMetrics)
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range checkRules(alertRules, docs) {
		t.Error(err)
	}
}

// The shipped alerts cover what operators were promised an alert for: a
// cluster that cannot lose another voter (tenure_failure_tolerance) and a
// group with fewer workers able to take keys than its minimum.
func TestAlertRulesCoverToleranceAndGroupMinimum(t *testing.T) {
	rgs, errs := rulefmt.ParseFile(alertRules, false, model.LegacyValidation, parser.NewParser(parser.Options{}), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	want := map[string][]string{
		"TenureNoFailureTolerance":   {"tenure_failure_tolerance"},
		"TenureGroupBelowMinWorkers": {"tenure_group_eligible_workers", "tenure_group_min_workers"},
	}
	for _, g := range rgs.Groups {
		for _, r := range g.Rules {
			metrics, ok := want[r.Alert]
			if !ok {
				continue
			}
			for _, m := range metrics {
				if !strings.Contains(r.Expr, m) {
					t.Errorf("alert %s does not read %s: %s", r.Alert, m, r.Expr)
				}
			}
			delete(want, r.Alert)
		}
	}
	for name := range want {
		t.Errorf("%s has no alert %s", alertRules, name)
	}
}

// Every Grafana dashboard is JSON whose queries parse as PromQL and use
// only documented metrics.
func TestDashboards(t *testing.T) {
	docs, err := documentedMetrics(docsMetrics)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dashboards, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no dashboards in %s (%v)", dashboards, err)
	}
	for _, f := range files {
		for _, err := range checkDashboard(f, docs) {
			t.Error(err)
		}
	}
}

// The checks fail on what they must catch: a rule whose PromQL does not
// parse, a rule that is not a rule, a metric that is not documented, a
// dashboard that is not JSON or whose query does not parse.
func TestChecksCatchBrokenFiles(t *testing.T) {
	docs := map[string]bool{"tenure_is_leader": true}
	dir := t.TempDir()
	for _, tt := range []struct {
		name, file, text, want string
	}{
		{"bad promql", "rules.yml", "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: max(tenure_is_leader <\n", "parse error"},
		{"unknown field", "rules.yml", "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: max(tenure_is_leader) < 1\n        fore: 10s\n", "fore"},
		{"undocumented metric in a rule", "rules.yml", "groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: tenure_raft_appendEntries > 1\n", "tenure_raft_appendEntries"},
		{"dashboard not json", "dash.json", `{"title": "t", "panels": [`, "unexpected end"},
		{"bad promql in a dashboard", "dash.json", `{"title": "t", "panels": [{"targets": [{"expr": "rate(tenure_is_leader[$__rate_interval]"}]}]}`, "parse error"},
		{"undocumented metric in a dashboard", "dash.json", `{"title": "t", "panels": [{"targets": [{"expr": "tenure_no_such_metric"}]}]}`, "tenure_no_such_metric"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.file)
			if err := os.WriteFile(path, []byte(tt.text), 0o600); err != nil {
				t.Fatal(err)
			}
			var errs []error
			if strings.HasSuffix(tt.file, ".json") {
				errs = checkDashboard(path, docs)
			} else {
				errs = checkRules(path, docs)
			}
			found := false
			for _, err := range errs {
				found = found || strings.Contains(err.Error(), tt.want)
			}
			if !found {
				t.Errorf("errors %v, want one that says %q", errs, tt.want)
			}
		})
	}
}
