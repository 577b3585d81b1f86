package httpapi

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
)

// behind is the lease store of a follower whose disk is full: its applied
// index is stuck, so a stale read of a key created since answers 404. It
// makes no write (the embedded Leases is nil).
type behind struct {
	Leases
	index uint64
}

func (b behind) LeaseIndex() uint64 { return b.index }
func (b behind) Get(context.Context, string, cluster.Consistency) (cluster.LeaseView, error) {
	return cluster.LeaseView{}, cluster.ErrNotFound
}
func (b behind) ListPage(context.Context, fsm.Filter, fsm.Page, cluster.Consistency) (cluster.LeasePage, error) {
	return cluster.LeasePage{Index: b.index}, nil
}

// laggingNode is a follower that hears its leader (a fresh last contact)
// but whose disk is full, with problem (or none).
func laggingNode(problem string) *fakeReplica {
	return &fakeReplica{status: cluster.Status{NodeID: "n2", Role: "follower", LeaderID: "n1", LeaderHTTPAddr: "127.0.0.1:1", Term: 3,
		LastContact: 12 * time.Millisecond,
		Health: cluster.NodeHealth{Problem: problem, LeaderCommit: 5010, AppliedIndex: 10, BehindEntries: 5000,
			BehindFor: 42 * time.Second, DiskWriteErrors: 17, LastDiskError: "write raft.db: no space left on device"}}}
}

// callBehind makes one request of a server of f, its leases behind.
func (f *fakeReplica) callBehind(t *testing.T, method, path string) reply {
	t.Helper()
	n := f.node()
	n.Leases = behind{index: f.status.Health.AppliedIndex}
	return callFake(t, n, method, path, "")
}

// Guarantee (readiness tells the truth): a follower that knows its leader
// but cannot write its log or its snapshots, or is far behind, answers
// /readyz 503 with the reason, and /v1/status says the same.
func TestReadyzReportsDiskAndLag(t *testing.T) {
	const problem = "raft log or stable store write failed 1s ago (17 failed writes): write raft.db: no space left on device"
	f := laggingNode(problem)

	r := f.callBehind(t, http.MethodGet, "/readyz")
	r.wantStatus(t, "readyz", http.StatusServiceUnavailable)
	var ready client.Readiness
	r.decode(t, &ready)
	if ready.Ready || ready.Reason != problem || ready.BehindEntries != 5000 || ready.BehindFor != "42s" || ready.DiskWriteErrors != 17 {
		t.Errorf("readyz: got %+v, want not ready with the disk problem, 5000 entries behind for 42s, 17 disk errors", ready)
	}

	r = f.callBehind(t, http.MethodGet, "/v1/status")
	r.wantStatus(t, "status", http.StatusOK)
	var st client.NodeStatus
	r.decode(t, &st)
	if st.NotReady != problem || st.LeaderCommitIndex != 5010 || st.BehindEntries != 5000 || st.BehindFor != "42s" ||
		st.DiskWriteErrors != 17 || !strings.Contains(st.LastDiskError, "no space") {
		t.Errorf("status: got %+v, want not_ready with the problem, commit 5010, 5000 behind for 42s, 17 disk errors", st)
	}

	ok := laggingNode("")
	ok.status.Health = cluster.NodeHealth{LeaderCommit: 10, AppliedIndex: 10}
	r = ok.callBehind(t, http.MethodGet, "/readyz")
	r.wantStatus(t, "readyz of a caught-up follower", http.StatusOK)

	const snapProblem = "snapshot write failed 2s ago and none succeeded since (4 failed snapshots): write state.bin: no space left on device"
	snap := laggingNode(snapProblem)
	snap.status.Health = cluster.NodeHealth{Problem: snapProblem, LeaderCommit: 10, AppliedIndex: 10,
		SnapshotWriteErrors: 4, LastSnapshotError: "write state.bin: no space left on device", SnapshotFailing: true}
	r = snap.callBehind(t, http.MethodGet, "/readyz")
	r.wantStatus(t, "readyz of a follower that cannot snapshot", http.StatusServiceUnavailable)
	ready = client.Readiness{}
	r.decode(t, &ready)
	if ready.Ready || ready.Reason != snapProblem || ready.SnapshotWriteErrors != 4 {
		t.Errorf("readyz: got %+v, want not ready with the snapshot problem and 4 snapshot errors", ready)
	}
	r = snap.callBehind(t, http.MethodGet, "/v1/status")
	st = client.NodeStatus{}
	r.decode(t, &st)
	if st.NotReady != snapProblem || st.SnapshotWriteErrors != 4 || !strings.Contains(st.LastSnapshotError, "no space") {
		t.Errorf("status: got %+v, want not_ready with the snapshot problem, 4 snapshot errors and the last one", st)
	}
}

// Guarantee (stale reads say how stale): a stale read from a follower whose
// applied index is stuck does not claim a fresh last contact: the header
// counts the time it has been behind, names its applied index and how far
// behind it is, and says it is not ready; the client sees all of it, also
// on a 404.
func TestStaleReadHeadersCountAppliedLag(t *testing.T) {
	const problem = "applied index 10 has been behind the leader's commit index 5010 for 42s (ready-max-lag-time 5s)"
	f := laggingNode(problem)
	r := f.callBehind(t, http.MethodGet, "/v1/leases/exists-on-the-leader?stale=true")
	r.wantStatus(t, "stale read", http.StatusNotFound)
	for h, want := range map[string]string{
		client.HeaderLastContact:  strconv.Itoa(42000),
		client.HeaderAppliedIndex: "10",
		client.HeaderBehind:       "5000",
		client.HeaderNotReady:     problem,
	} {
		if got := r.header.Get(h); got != want {
			t.Errorf("%s: got %q, want %q", h, got, want)
		}
	}

	// A fresh follower: the last contact is the heartbeat's, no not-ready.
	fresh := laggingNode("")
	fresh.status.Health = cluster.NodeHealth{LeaderCommit: 10, AppliedIndex: 10}
	r = fresh.callBehind(t, http.MethodGet, "/v1/leases/k?stale=true")
	if got := r.header.Get(client.HeaderLastContact); got != "12" {
		t.Errorf("fresh follower: %s %q, want 12", client.HeaderLastContact, got)
	}
	if got, ok := r.header[http.CanonicalHeaderKey(client.HeaderNotReady)]; ok {
		t.Errorf("fresh follower: %s %q, want absent", client.HeaderNotReady, got)
	}
}
