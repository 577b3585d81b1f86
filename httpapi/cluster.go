package httpapi

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/hashicorp/raft"
)

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	st := s.node.Status()
	out := statusJSON{
		NodeID:         st.NodeID,
		Role:           st.Role,
		LeaderID:       st.LeaderID,
		LeaderHTTPAddr: st.LeaderHTTPAddr,
		Term:           st.Term,
		LastLogIndex:   st.LastLogIndex,
		CommitIndex:    st.CommitIndex,
		AppliedIndex:   st.AppliedIndex,
		LastToken:      st.LastToken,
		LastContact:    st.LastContact.Round(time.Millisecond).String(),
		Ready:          st.Ready,
		Servers:        []serverJSON{},
	}
	if st.LastContact < 0 {
		out.LastContact = "never"
	}
	for _, srv := range st.Servers {
		suffrage := "nonvoter"
		if srv.Voter {
			suffrage = "voter"
		}
		out.Servers = append(out.Servers, serverJSON{ID: srv.ID, RaftAddr: srv.RaftAddr, HTTPAddr: srv.HTTPAddr, Suffrage: suffrage, Leader: srv.Leader})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) members(w http.ResponseWriter, r *http.Request) {
	out := []memberJSON{}
	for _, m := range s.node.Members() {
		out = append(out, memberJSON{Name: m.Name, Addr: m.Addr, Status: m.Status, Role: m.Meta.Role, Meta: m.Meta})
	}
	writeJSON(w, http.StatusOK, map[string]any{"members": out})
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

func (s *Server) transferLeader(w http.ResponseWriter, r *http.Request) error {
	var body struct {
		ID string `json:"id"`
	}
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
	writeJSON(w, http.StatusOK, map[string]string{"leader_id": leader})
	return nil
}

func (s *Server) snapshot(w http.ResponseWriter, r *http.Request) {
	info, err := s.node.Snapshot(r.Context())
	if errors.Is(err, raft.ErrNothingNewToSnapshot) {
		writeError(w, &apiError{status: http.StatusConflict, code: "nothing_new", msg: "nothing new to snapshot since the last one"})
		return
	}
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": info.ID, "index": info.Index, "term": info.Term, "size": info.Size})
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz is 200 while this node can serve: a follower that knows a leader,
// or a leader that has established its leadership and confirms it with a
// quorum round now.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	st := s.node.Status()
	out := map[string]any{"ready": false, "role": st.Role, "leader_id": st.LeaderID}
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
		out["reason"] = reason
		w.Header().Set("Retry-After", "1")
		writeJSON(w, http.StatusServiceUnavailable, out)
		return
	}
	out["ready"] = true
	writeJSON(w, http.StatusOK, out)
}
