package harness

import (
	"strings"
	"testing"
)

// WantError checks the error of what (a call, or a case's step): one that
// contains want when want is set, else none; either way a mismatch ends
// t. It reports whether an error was wanted, which ends the case.
func WantError(t testing.TB, what string, err error, want string) bool {
	t.Helper()
	if want != "" {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s: error %v, want one containing %q", what, err, want)
		}
		return true
	}
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return false
}
