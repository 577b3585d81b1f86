package client

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/client/wire"
)

// TestGivingUpReportsTheMostTellingAnswer: with two of three servers down,
// the survivor's no_leader says what is wrong, not the refused connection
// of whichever server was tried last; the error names every server tried
// and still matches ErrNoLeader.
func TestGivingUpReportsTheMostTellingAnswer(t *testing.T) {
	survivor := failingServer(t, http.StatusServiceUnavailable, wire.CodeNoLeader, "n1 has no leader: it is candidate in term 7 and cannot reach a quorum")
	down1, down2 := downAddress(t), downAddress(t)
	c, _ := newTestClient(t, survivor.URL, down1, down2)
	c.cfg.RetryMax = 5
	_, _, err := c.Status(context.Background())
	if err == nil {
		t.Fatal("status succeeded without a leader")
	}
	if !errors.Is(err, ErrNoLeader) {
		t.Errorf("error %v does not match ErrNoLeader", err)
	}
	msg := err.Error()
	for _, want := range []string{"cannot reach a quorum", survivor.URL + " answered", down1, down2, "refused"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if i, j := strings.Index(msg, "cannot reach a quorum"), strings.Index(msg, "refused"); i < 0 || j < i {
		t.Errorf("error %q does not put the server's answer before the refused connections", msg)
	}
}
