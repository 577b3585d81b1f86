package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
)

func (s *Server) status(w http.ResponseWriter, r *http.Request) error {
	return s.hashBlocking(w, r, s.node.Replica.StatusChanged, func() (any, string, bool) {
		st := s.node.Replica.Status()
		return statusOut(st), statusHash(st), st.LeaderID == "" || st.ClusterID == ""
	})
}

// members answers the gossip members to any valid token: the servers in
// full (workers find them here), a worker's holder and groups only to a
// token with read on "" (every key, as GET /v1/workers needs). The content
// hash is of the answer the token gets, so a blocking read of it ends only
// when something it shows changes.
func (s *Server) members(w http.ResponseWriter, r *http.Request) error {
	a := authz(r)
	all := a.Allow(fsm.RightRead, "key", "") == nil
	return s.hashBlocking(w, r, s.node.Members.MembersChanged, func() (any, string, bool) {
		out := wire.MemberList{Members: []wire.Member{}}
		for _, m := range s.node.Members.Members() {
			mo := memberOut(m)
			if !all {
				mo.Meta.Holder, mo.Meta.Groups = "", nil
			}
			out.Members = append(out.Members, mo)
		}
		return out, contentHash(out), false
	})
}

func (s *Server) removeServer(w http.ResponseWriter, r *http.Request) error {
	force, err := parseForce(r)
	if err != nil {
		return err
	}
	return s.write(w, r, func(ctx context.Context) (any, error) {
		res, err := s.node.Operator.RemoveServer(ctx, pathVar(r, "id"), force)
		return wire.RemoveResult{ID: res.ID, Voters: res.Voters, Forced: res.Forced, Readmit: res.Readmit}, err
	})
}

func (s *Server) readmitServer(w http.ResponseWriter, r *http.Request) error {
	return s.write(w, r, func(ctx context.Context) (any, error) {
		srv, err := s.node.Operator.ReadmitServer(ctx, pathVar(r, "id"))
		return wire.ReadmitResult{ID: srv.ID, RaftAddr: srv.RaftAddr, Voter: srv.Voter}, err
	})
}

func (s *Server) promoteServer(w http.ResponseWriter, r *http.Request) error {
	return s.write(w, r, func(ctx context.Context) (any, error) {
		voters, err := s.node.Operator.PromoteServer(ctx, pathVar(r, "id"))
		return wire.PromoteResult{ID: pathVar(r, "id"), Voters: voters}, err
	})
}

func (s *Server) transferLeader(w http.ResponseWriter, r *http.Request) error {
	var body wire.TransferBody
	if err := decodeOptionalBody(r, &body); err != nil {
		return err
	}
	return s.write(w, r, func(ctx context.Context) (any, error) {
		leader, err := s.node.Operator.TransferLeadership(ctx, body.ID)
		return wire.TransferResult{LeaderID: leader}, err
	})
}

func (s *Server) snapshot(w http.ResponseWriter, r *http.Request) error {
	info, err := s.node.Operator.Snapshot(r.Context())
	if errors.Is(err, raft.ErrNothingNewToSnapshot) {
		return &apiError{code: wire.CodeNothingNew, msg: "nothing new to snapshot since the last one"}
	}
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, wire.SnapshotInfo{ID: info.ID, Index: info.Index, Term: info.Term, Size: info.Size})
	return nil
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, wire.Health{Status: "ok"})
}

// readyz is 200 while this node can serve: a follower that knows a leader,
// or a leader that has established its leadership and confirms it with a
// quorum round now; and in either case its disk takes writes (its last
// snapshot, if any failed, was followed by one that succeeded) and its
// applied index is within the configured lag of the leader's commit index
// (cluster.Node.Health).
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	st := s.node.Replica.Status()
	out := wire.Readiness{Role: st.Role, LeaderID: st.LeaderID, BehindEntries: st.Health.BehindEntries,
		BehindFor: st.Health.BehindFor.Round(time.Millisecond).String(), DiskWriteErrors: st.Health.DiskWriteErrors,
		SnapshotWriteErrors: st.Health.SnapshotWriteErrors}
	var reason string
	switch {
	case st.Health.Problem != "":
		reason = st.Health.Problem
	case st.Role == "leader":
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.node.Replica.Verify(ctx); err != nil {
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
	views, members, err := s.node.Operator.Keyring()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, keyringOut(views, members, nil))
	return nil
}

// changeKeyring installs, uses or removes a gossip key on this server,
// then on every other server of the Raft configuration through their API
// (with the caller's TLS-verified connection and token, so only an
// operator can change a server's keyring), then on the workers over
// gossip. A request from another server (headerKeyringLocal) changes this
// server only. Unless Force, it refuses a use of a key that an alive
// member lacks, and a remove of a key that an alive member encrypts with:
// either would cut that member off.
func (s *Server) changeKeyring(w http.ResponseWriter, r *http.Request) error {
	var body wire.KeyringBody
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	op := cluster.KeyringMessage{Op: body.Op, Key: body.GossipKey}
	local := r.Header.Get(headerKeyringLocal) != ""
	if !local && !body.Force {
		if err := s.keyringSafe(op); err != nil {
			return err
		}
	}
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	if err := s.node.Operator.ChangeKeyring(op); err != nil {
		return err
	}
	var unreached []string
	if !local {
		unreached = s.spreadKeyring(ctx, r, body)
		workers, err := s.node.Operator.SendKeyringToWorkers(ctx, op)
		if err != nil {
			return err
		}
		unreached = append(unreached, workers...)
	}
	views, members, err := s.node.Operator.Keyring()
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, keyringOut(views, members, unreached))
	return nil
}

// headerKeyringLocal marks a keyring change one server passes to another.
const headerKeyringLocal = "X-Tenure-Keyring-Local"

// keyringSafe refuses an op that would cut an alive member off.
func (s *Server) keyringSafe(op cluster.KeyringMessage) error {
	key, err := cluster.ParseGossipKey(op.Key)
	if err != nil {
		return nil // the change itself refuses it, naming the field
	}
	fp := wire.KeyFingerprint(key)
	views, members, err := s.node.Operator.Keyring()
	if err != nil {
		return err
	}
	var held, primary int
	for _, v := range views {
		if v.Fingerprint == fp {
			held, primary = v.Holders, v.Primary
		}
	}
	switch {
	case op.Op == wire.KeyringUse && held < members:
		return badRequest(wire.CodeInvalidBody, "gossip_key", fmt.Sprintf(
			"gossip_key: %d of %d alive members hold key %s: install it everywhere first (or force)", held, members, fp))
	case op.Op == wire.KeyringRemove && primary > 0:
		return badRequest(wire.CodeInvalidBody, "gossip_key", fmt.Sprintf(
			"gossip_key: %d alive members still encrypt with key %s: use another key everywhere first (or force)", primary, fp))
	}
	return nil
}

// spreadKeyring passes a keyring change to every other server of the Raft
// configuration and returns the ids of those that did not take it.
func (s *Server) spreadKeyring(ctx context.Context, r *http.Request, body wire.KeyringBody) []string {
	b, err := json.Marshal(body)
	if err != nil {
		return nil
	}
	var failed []string
	for _, srv := range s.node.Replica.Status().Servers {
		if srv.ID == s.node.Replica.ID() {
			continue
		}
		if err := s.sendKeyring(ForServer(ctx, srv.ID), r, srv.HTTPAddr, b); err != nil {
			s.log.Warn("passing a keyring change to a server failed", "server_id", srv.ID, "error", err)
			failed = append(failed, srv.ID)
		}
	}
	return failed
}

func (s *Server) sendKeyring(ctx context.Context, r *http.Request, addr string, body []byte) error {
	if addr == "" {
		return errors.New("its HTTP address is unknown")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.ForwardScheme+"://"+addr+"/v1/operator/keyring", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(headerKeyringLocal, "1")
	copyHeaders(req.Header, r.Header, wire.HeaderToken, "Authorization")
	resp, err := s.cfg.ForwardClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%d %s", resp.StatusCode, bytes.TrimSpace(msg))
	}
	return nil
}
