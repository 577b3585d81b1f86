package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/cluster"
)

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, statusOut(s.node.Status()))
}

func (s *Server) members(w http.ResponseWriter, r *http.Request) {
	out := client.MemberList{Members: []client.Member{}}
	for _, m := range s.node.Members() {
		out.Members = append(out.Members, memberOut(m))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) removeServer(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	if err := s.node.RemoveServer(ctx, pathVar(r, "id")); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) promoteServer(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	id := pathVar(r, "id")
	voters, err := s.node.PromoteServer(ctx, id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, client.PromoteResult{ID: id, Voters: voters})
	return nil
}

func (s *Server) transferLeader(w http.ResponseWriter, r *http.Request) error {
	var body client.TransferBody
	if r.ContentLength != 0 {
		if err := decodeBody(r, &body); err != nil {
			return err
		}
	}
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	leader, err := s.node.TransferLeadership(ctx, body.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, client.TransferResult{LeaderID: leader})
	return nil
}

func (s *Server) snapshot(w http.ResponseWriter, r *http.Request) {
	info, err := s.node.Snapshot(r.Context())
	if errors.Is(err, raft.ErrNothingNewToSnapshot) {
		writeError(w, &apiError{code: client.CodeNothingNew, msg: "nothing new to snapshot since the last one"})
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, client.SnapshotInfo{ID: info.ID, Index: info.Index, Term: info.Term, Size: info.Size})
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, client.Health{Status: "ok"})
}

// readyz is 200 while this node can serve: a follower that knows a leader,
// or a leader that has established its leadership and confirms it with a
// quorum round now.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	st := s.node.Status()
	out := client.Readiness{Role: st.Role, LeaderID: st.LeaderID}
	var reason string
	switch {
	case st.Role == "leader":
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.node.Verify(ctx); err != nil {
			reason = "leader cannot confirm its leadership: " + err.Error()
		}
	case st.LeaderID == "":
		reason = "no known leader"
	}
	if reason != "" {
		out.Reason = reason
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, out)
		return
	}
	out.Ready = true
	writeJSON(w, http.StatusOK, out)
}

// keyring lists the gossip keys that the members in this node's view hold.
func (s *Server) keyring(w http.ResponseWriter, r *http.Request) error {
	views, members, err := s.node.Keyring()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, keyringOut(views, members, nil))
	return nil
}

// changeKeyring installs, uses or removes a gossip key on this server and
// sends the change to every member; any server answers it.
func (s *Server) changeKeyring(w http.ResponseWriter, r *http.Request) error {
	var body client.KeyringBody
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	unreached, err := s.node.ChangeKeyring(ctx, cluster.KeyringMessage{Op: body.Op, Key: body.GossipKey})
	if err != nil {
		return err
	}
	views, members, err := s.node.Keyring()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, keyringOut(views, members, unreached))
	return nil
}
