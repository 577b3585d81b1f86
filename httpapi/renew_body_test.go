package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
)

// renewingLeases renews every lease it is asked to.
type renewingLeases struct{ Leases }

func (renewingLeases) RenewMany(_ context.Context, holder string, refs []cluster.LeaseRef) ([]cluster.RenewResult, error) {
	out := make([]cluster.RenewResult, len(refs))
	for i, r := range refs {
		out[i] = cluster.RenewResult{Lease: cluster.LeaseView{Lease: &fsm.Lease{Key: r.Key, Holder: holder, Token: r.Token}}}
	}
	return out, nil
}

// Guarantee (a holder renews all it may in one call): a bulk renewal of
// the most leases a call may carry, each with a key of the longest length
// and its own secret, is not refused for its size; a larger body is, with
// a 400 naming the limit.
func TestBulkRenewalOfLongKeysFitsItsBody(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Node = Node{Replica: &leadingReplica{}, Leases: renewingLeases{}}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	defer srv.Close()
	body := func(n int) string {
		refs := make([]wire.LeaseRef, n)
		for i := range refs {
			key := fmt.Sprintf("%d/", i) + strings.Repeat("k", fsm.MaxKeyLen)
			refs[i] = wire.LeaseRef{Key: key[:fsm.MaxKeyLen], Token: 1 << 40, Secret: strings.Repeat("s", 128)}
		}
		b, err := json.Marshal(wire.RenewManyBody{Holder: strings.Repeat("h", 64), Leases: refs, Brief: true})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	full := body(cluster.MaxRenewBatch)
	if len(full) <= MaxBodyBytes {
		t.Fatalf("a full batch is %d bytes, within the 64 KiB of other bodies: the test proves nothing", len(full))
	}
	resp := post(t, srv, http.MethodPost, "/v1/renew", full)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("bulk renewal of %d leases with %d-byte keys (%d bytes): %d, want 200", cluster.MaxRenewBatch, fsm.MaxKeyLen, len(full), resp.StatusCode)
	}
	big := `{"holder":"h","leases":[]}` + strings.Repeat(" ", MaxRenewBodyBytes)
	resp = post(t, srv, http.MethodPost, "/v1/renew", big)
	var e wire.ErrorBody
	json.NewDecoder(resp.Body).Decode(&e)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || e.Error != wire.CodeBodyTooLarge || !strings.Contains(e.Message, fmt.Sprint(MaxRenewBodyBytes)) {
		t.Fatalf("a bulk renewal body over %d bytes: %d %+v, want 400 body_too_large naming the limit", MaxRenewBodyBytes, resp.StatusCode, e)
	}
}
