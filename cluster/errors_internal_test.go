package cluster

import (
	"errors"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/fsm"
)

func TestErrorsUnwrapToTheirRefusal(t *testing.T) {
	lease := &fsm.Lease{Key: "k", Holder: "h", Token: 7, Held: true}
	for _, tt := range []struct {
		err  error
		is   error
		says string
	}{
		{&SecretError{Key: "k"}, ErrWrongSecret, `lease on "k"`},
		{&NotHolderError{Lease: lease}, ErrNotHolder, `held by "h" under token 7`},
		{&CASError{Name: "g", Index: 3}, ErrCASFailed, `group "g" does not exist`},
		{&CASError{Name: "g", Group: &fsm.Group{ModifyIndex: 5}}, ErrCASFailed, "give its modify index as cas"},
		{&HeldError{Lease: lease}, ErrHeld, `held by "h" (token 7)`},
		{&HeldError{Lease: lease, WrongSecret: true}, ErrHeld, "under another secret"},
		{&LostError{Key: "k", Reason: "expired"}, ErrLeaseLost, `lease on "k" lost: expired`},
	} {
		if !errors.Is(tt.err, tt.is) {
			t.Errorf("%T is not %v", tt.err, tt.is)
		}
		if !strings.Contains(tt.err.Error(), tt.says) {
			t.Errorf("%q does not say %q", tt.err, tt.says)
		}
	}
}
