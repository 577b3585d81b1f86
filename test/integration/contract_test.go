package integration

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/test/harness"
)

// TestReleaseSaysWhatItDidAndFreeKeysAreForgotten: through a follower
// (forwarded to the leader), a release says whether it freed the lease,
// one that was never the caller's is refused with not_holder, and a key
// used once is forgotten after -free-key-retention while its token counter
// keeps growing.
func TestReleaseSaysWhatItDidAndFreeKeysAreForgotten(t *testing.T) {
	c := startServers(t, 3, "-free-key-retention", "1s")
	l := c.leader(t)
	f := c.followers(l)[0]

	r := c.call(t, f, http.MethodPut, "/v1/leases/once", wire.AcquireBody{Holder: "h1", TTL: "30s"})
	if r.Status != http.StatusCreated {
		t.Fatalf("acquire: %v", r)
	}
	var granted lease
	r.decode(t, &granted)

	r = c.call(t, f, http.MethodDelete, fmt.Sprintf("/v1/leases/once?holder=h2&token=%d", granted.Token), nil)
	if r.Status != http.StatusConflict || !strings.Contains(string(r.Body), wire.CodeNotHolder) {
		t.Fatalf("release by another holder: %v, want 409 not_holder", r)
	}
	path := fmt.Sprintf("/v1/leases/once?holder=h1&token=%d", granted.Token)
	for _, want := range []string{"freed", "gone"} {
		r = c.call(t, f, http.MethodDelete, path, nil)
		if r.Status != http.StatusNoContent || r.Header.Get(client.HeaderRelease) != want {
			t.Fatalf("release: %v %s=%q, want 204 %s", r, client.HeaderRelease, r.Header.Get(client.HeaderRelease), want)
		}
	}

	harness.WaitUntil(t, 20*time.Second, "once forgotten", func() bool {
		return c.call(t, l, http.MethodGet, "/v1/leases/once", nil).Status == http.StatusNotFound
	})
	r = c.call(t, f, http.MethodPut, "/v1/leases/once", wire.AcquireBody{Holder: "h3", TTL: "30s"})
	var again lease
	r.decode(t, &again)
	if r.Status != http.StatusCreated || again.Token <= granted.Token {
		t.Fatalf("acquire after forgetting: %v, want 201 with a token above %d", r, granted.Token)
	}
}
