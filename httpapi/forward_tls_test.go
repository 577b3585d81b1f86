package httpapi

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/tenure-io/tenure/cluster"
)

// A forwarded request over TLS is sent only to a server whose certificate
// names the node id the request is for: n3's certificate does not answer
// for n1 (a relay, or a leader address that someone else gave), and a
// request that names no server is not sent at all.
func TestForwardClientChecksTheServerID(t *testing.T) {
	pki := newTestPKI(t)
	n3 := pki.server(t, "n3")
	sc, err := cluster.ServerTLSConfig(n3)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	srv.TLS = sc
	srv.StartTLS()
	t.Cleanup(srv.Close)

	hc := forwardClient(t, pki.server(t, "n2"))
	send := func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/v1/status", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	if err := send(ForServer(context.Background(), "n3")); err != nil {
		t.Fatalf("request for n3 to n3: %v", err)
	}
	if err := send(ForServer(context.Background(), "n1")); !errors.Is(err, cluster.ErrWrongServerID) {
		t.Fatalf("request for n1 to n3: got %v, want ErrWrongServerID", err)
	}
	if err := send(context.Background()); !errors.Is(err, errNoServerID) {
		t.Fatalf("request for no server: got %v, want errNoServerID", err)
	}
}
