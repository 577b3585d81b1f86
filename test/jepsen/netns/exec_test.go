//go:build linux

package netns

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestHTTPClientDialsFromHub(t *testing.T) {
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:9") // must be ignored
	n := setup(t, "n1")
	l, err := n.ListenIn("n1", "tcp4", n.Addr("n1")+":0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, r.RemoteAddr)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	resp, err := n.HTTPClient(2 * time.Second).Get("http://" + l.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(body), n.Hub()+":") {
		t.Errorf("server saw the request from %q, want the hub %s", body, n.Hub())
	}
}
