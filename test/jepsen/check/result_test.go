package check

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResultString(t *testing.T) {
	r := Result{Name: "demo", Valid: false, Ops: 3, Violations: []string{"bad"}, Notes: []string{"fyi"}}
	want := "FAIL    demo (3 examined, 1 violations listed)\n  violation: bad\n  note: fyi\n"
	if got := r.String(); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	if got := (Result{Name: "ok", Valid: true}).String(); !strings.HasPrefix(got, "PASS") {
		t.Fatalf("got %q", got)
	}
}

func TestVerdictCapsViolations(t *testing.T) {
	v := newVerdict("many")
	for i := 0; i < maxListed+5; i++ {
		v.fail("violation %d", i)
	}
	r := v.done()
	if r.Valid || len(r.Violations) != maxListed || r.Notes[len(r.Notes)-1] != "5 more violations not listed" {
		t.Fatalf("got %d violations, notes %q", len(r.Violations), r.Notes)
	}
}

func TestWriteSummary(t *testing.T) {
	path := filepath.Join(t.TempDir(), "summary.txt")
	cases := []struct {
		results []Result
		want    string
	}{
		{[]Result{{Name: "a", Valid: true}}, "overall: PASS (1 checks)"},
		{[]Result{{Name: "a", Valid: true}, {Name: "b", Unknown: true}}, "overall: FAIL (2 checks)"},
		{[]Result{{Name: "a", Valid: true, Unknown: true}, {Name: "b"}}, "overall: FAIL (2 checks)"},
	}
	for _, c := range cases {
		if err := WriteSummary(path, c.results); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range c.results {
			if !strings.Contains(string(b), r.String()) {
				t.Fatalf("summary lacks %q:\n%s", r.String(), b)
			}
		}
		if !strings.Contains(string(b), c.want) {
			t.Fatalf("summary lacks %q:\n%s", c.want, b)
		}
	}
	err := WriteSummary(filepath.Join(path, "not-a-dir", "x"), nil)
	if err == nil || !strings.Contains(fmt.Sprint(err), "write summary") {
		t.Fatalf("err = %v", err)
	}
}
