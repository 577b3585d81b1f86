package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/wire"
)

func TestStatusAndMembers(t *testing.T) {
	tests := []struct {
		name        string
		lastContact any
		want        time.Duration
	}{
		{"duration string", "15ms", 15 * time.Millisecond},
		{"milliseconds", 15, 15 * time.Millisecond},
		{"absent", nil, 0},
		{"never", "never", -1},
		{"never in milliseconds", -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				switch r.URL.Path {
				case "/v1/status":
					body := map[string]any{"node_id": "n1", "role": "follower", "leader_id": "n2",
						"leader_http_addr": "10.0.0.2:7500", "term": 4, "last_log_index": 90,
						"commit_index": 90, "applied_index": 89, "ready": true,
						"servers": []any{map[string]any{"id": "n2", "raft_addr": "10.0.0.2:7501",
							"http_addr": "10.0.0.2:7500", "suffrage": "voter", "leader": true}}}
					if tt.lastContact != nil {
						body["last_contact"] = tt.lastContact
					}
					writeJSON(w, 200, body)
				case "/v1/members":
					writeJSON(w, 200, map[string]any{"members": []any{map[string]any{
						"name": "n1", "addr": "10.0.0.1:7946", "status": "alive", "role": "server",
						"meta": map[string]any{"capacity": 8}}}})
				}
			})
			c, _ := newTestClient(t, srv.URL)
			st, _, err := c.Status(context.Background())
			if err != nil {
				t.Fatalf("Status: %v", err)
			}
			if st.NodeID != "n1" || st.Term != 4 || st.AppliedIndex != 89 || st.LastContact != tt.want ||
				len(st.Servers) != 1 || !st.Servers[0].Leader {
				t.Errorf("status = %+v, want node n1 term 4 applied 89 last contact %v and leader n2", st, tt.want)
			}
			ms, _, err := c.Members(context.Background())
			if err != nil {
				t.Fatalf("Members: %v", err)
			}
			if len(ms) != 1 || ms[0].Status != "alive" || ms[0].Meta.Capacity != 8 {
				t.Errorf("members = %+v, want n1 alive with capacity 8", ms)
			}
		})
	}
}

func TestOperatorCalls(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch r.URL.Path {
		case "/v1/operator/servers/n3":
			writeJSON(w, 200, map[string]any{"id": "n3", "voters": 2, "forced": []string{"rule"}, "readmit": "to bring n3 back, …"})
		case "/v1/operator/servers/n2":
			writeError(w, 409, wire.CodeUnsafeRemoval, "server n2 is alive")
		case "/v1/operator/servers/n6/readmit":
			writeJSON(w, 200, map[string]any{"id": "n6", "raft_addr": "10.0.0.6:7501", "voter": false})
		case "/v1/operator/servers/nope":
			writeError(w, 404, wire.CodeNotFound, "no server nope")
		case "/v1/operator/transfer-leader":
			writeJSON(w, 200, map[string]string{"leader_id": "n2"})
		case "/v1/operator/snapshot":
			writeJSON(w, 200, map[string]any{"id": "4-90-123", "index": 90, "term": 4, "size": 2048})
		case "/v1/operator/servers/n4/promote":
			writeJSON(w, 200, map[string]any{"id": "n4", "voters": 4})
		case "/v1/operator/servers/n5/promote":
			writeError(w, 409, wire.CodeNotCaughtUp, "server n5 has not answered the leader")
		}
	})
	c, _ := newTestClient(t, srv.URL)
	ctx := context.Background()
	op := c.Operator()

	if res, _, err := op.RemoveServer(ctx, "n3", true); err != nil || res.Voters != 2 || len(res.Forced) != 1 || res.Readmit == "" {
		t.Errorf("RemoveServer = %+v, %v; want 2 voters, the forced rule and how to readmit", res, err)
	}
	if _, _, err := op.RemoveServer(ctx, "nope", false); !errors.Is(err, ErrNotFound) {
		t.Errorf("RemoveServer of an unknown id: err = %v, want ErrNotFound", err)
	}
	id, _, err := op.TransferLeader(ctx, "")
	if err != nil || id != "n2" {
		t.Errorf("TransferLeader = %q, %v; want n2", id, err)
	}
	snap, _, err := op.Snapshot(ctx)
	if err != nil || snap.Index != 90 || snap.Term != 4 || snap.ID != "4-90-123" {
		t.Errorf("Snapshot = %+v, %v; want id 4-90-123 index 90 term 4", snap, err)
	}
	reqs := srv.requests()
	if res, _, err := op.PromoteServer(ctx, "n4"); err != nil || res.ID != "n4" || res.Voters != 4 {
		t.Errorf("PromoteServer(n4) = %+v, %v; want n4 with 4 voters", res, err)
	}
	if _, _, err := op.PromoteServer(ctx, "n5"); !errors.Is(err, ErrNotCaughtUp) {
		t.Errorf("PromoteServer of a server that is behind: err = %v, want ErrNotCaughtUp", err)
	}
	if r := srv.requests()[len(reqs)]; r.Method != "POST" || r.Path != "/v1/operator/servers/n4/promote" {
		t.Errorf("promote request = %s %s, want POST /v1/operator/servers/n4/promote", r.Method, r.Path)
	}
	if r := reqs[0]; r.Method != "DELETE" || r.Query.Encode() != "force=true" {
		t.Errorf("remove-server request = %s ?%s, want DELETE ?force=true", r.Method, r.Query.Encode())
	}
	if _, _, err := op.RemoveServer(ctx, "n2", false); !errors.Is(err, ErrUnsafeRemoval) {
		t.Errorf("RemoveServer of an alive server: err = %v, want ErrUnsafeRemoval", err)
	}
	if res, _, err := op.ReadmitServer(ctx, "n6"); err != nil || res.RaftAddr != "10.0.0.6:7501" || res.Voter {
		t.Errorf("ReadmitServer = %+v, %v; want n6 at 10.0.0.6:7501, not a voter", res, err)
	}
	if r := reqs[2]; r.Method != "POST" || r.Body != "{}" {
		t.Errorf("transfer-leader request = %s %q, want POST {}", r.Method, r.Body)
	}
}

// WaitStatus and WaitMembers send the hash and the wait, allow for the
// wait in the attempt's timeout, and hand back the answer's hash; with no
// hash they are plain reads.
func TestWaitStatusAndMembersSendTheHash(t *testing.T) {
	srv := newFakeServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set(HeaderContentHash, "b2")
		if r.URL.Query().Get("hash") != "" {
			time.Sleep(300 * time.Millisecond) // longer than the client's per-attempt timeout
		}
		switch r.URL.Path {
		case "/v1/status":
			writeJSON(w, 200, map[string]any{"node_id": "n1", "role": "follower", "leader_id": "n2"})
		case "/v1/members":
			writeJSON(w, 200, map[string]any{"members": []any{map[string]any{"name": "n1", "status": "alive"}}})
		}
	})
	c, _ := newTestClient(t, srv.URL)
	c.cfg.Timeout = 100 * time.Millisecond
	ctx := context.Background()
	st, meta, err := c.WaitStatus(ctx, "a1", 2*time.Second)
	if err != nil || st.LeaderID != "n2" || meta.ContentHash != "b2" {
		t.Fatalf("WaitStatus: %+v, %+v, %v; want leader n2 and hash b2", st, meta, err)
	}
	ms, meta, err := c.WaitMembers(ctx, "a1", 0)
	if err != nil || len(ms) != 1 || meta.ContentHash != "b2" {
		t.Fatalf("WaitMembers: %+v, %+v, %v; want one member and hash b2", ms, meta, err)
	}
	if _, _, err := c.Status(ctx); err != nil {
		t.Fatalf("Status: %v", err)
	}
	reqs := srv.requests()
	want := []string{"/v1/status hash=a1 wait=2s", "/v1/members hash=a1 wait=", "/v1/status hash= wait="}
	for i, r := range reqs {
		got := fmt.Sprintf("%s hash=%s wait=%s", r.Path, r.Query.Get("hash"), r.Query.Get("wait"))
		if i >= len(want) || got != want[i] {
			t.Errorf("request %d: %s, want %v", i, got, want)
		}
	}
}
