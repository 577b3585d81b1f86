package check

import (
	"errors"
	"strings"
	"testing"
)

// Each check names its field, wraps ErrInvalid, and refuses control
// characters; a secret is never echoed.
func TestChecks(t *testing.T) {
	secret := strings.Repeat("s", MinSecretLen-1) + "\n"
	for _, tc := range []struct {
		err   error
		field string
	}{
		{Holder(""), "holder"},
		{Holder("a\x1bb"), "holder"},
		{Token(0), "token"},
		{Secret(""), "secret"},
		{Secret(secret), "secret"},
		{Metadata(map[string]string{"k": "v\n"}), "metadata"},
		{Metadata(map[string]string{"": "v"}), "metadata"},
		{Prohibited("prohibit", []string{"ok", "bad\x7f"}), "prohibit"},
	} {
		var ie *InvalidError
		if !errors.As(tc.err, &ie) || ie.Field != tc.field || !errors.Is(tc.err, ErrInvalid) {
			t.Errorf("%v: want an *InvalidError of field %s wrapping ErrInvalid", tc.err, tc.field)
		}
	}
	if err := Secret(secret); strings.Contains(err.Error(), "sss") {
		t.Errorf("Secret echoed the secret: %v", err)
	}
	for _, err := range []error{Holder("h"), Token(1), Secret(strings.Repeat("a", MinSecretLen)), Metadata(map[string]string{"k": "v"}), Prohibited("p", []string{"h"})} {
		if err != nil {
			t.Errorf("a valid value refused: %v", err)
		}
	}
	if ControlByte("ab\tc") != 2 || ControlByte("abc") != -1 {
		t.Errorf("ControlByte: %d, %d", ControlByte("ab\tc"), ControlByte("abc"))
	}
}
