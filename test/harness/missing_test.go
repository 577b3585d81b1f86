package harness

import "testing"

func TestMissingSkipsOrFailsUnderCI(t *testing.T) {
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		out := run(t, func(tb testing.TB) { Missing(tb, "no widget") })
		want := "skip: no widget"
		if ci == "true" {
			want = "no widget: failing under CI=true"
		}
		if out != want {
			t.Errorf("CI=%q: got %q, want %q", ci, out, want)
		}
	}
}
