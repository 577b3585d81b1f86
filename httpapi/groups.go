package httpapi

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"
	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
)

func summary(g *fsm.Group) wire.GroupSummary {
	return wire.GroupSummary{Name: g.Name, Keys: len(g.Keys), Assigned: len(g.Assignment), MaxPerWorker: g.MaxPerWorker, ModifyIndex: g.ModifyIndex}
}

// writeGroup makes a change of a group and answers the group's summary.
func (s *Server) writeGroup(w http.ResponseWriter, r *http.Request, change func(ctx context.Context) (*fsm.Group, error)) error {
	return s.write(w, r, func(ctx context.Context) (any, error) {
		g, err := change(ctx)
		if err != nil {
			return nil, err
		}
		return summary(g), nil
	})
}

func groupOut(v cluster.GroupView) wire.Group {
	out := wire.Group{Name: v.Name, MaxPerWorker: v.MaxPerWorker, ModifyIndex: v.ModifyIndex, AssignIndex: v.AssignIndex,
		Keys: make([]wire.GroupKey, len(v.Keys)), Workers: []wire.GroupWorker{}, MinWorkers: v.MinWorkers, Stuck: v.Stuck,
		HiddenKeys: v.Hidden, KeyCount: len(v.Group.Keys) - v.Hidden}
	if v.StuckGrace > 0 {
		out.StuckGrace = v.StuckGrace.String()
	}
	if v.Balance != nil {
		b := balanceOut(*v.Balance)
		out.Balance = &b
	}
	targets, holds := v.Targets, v.Holds // the whole group's, when a page
	count := targets == nil
	if count {
		targets, holds = map[string]int{}, map[string]int{}
	}
	for i, k := range v.Keys {
		kj := wire.GroupKey{Key: k.Key, Target: k.Target, Preparing: v.Group.Prepare[k.Key], State: "free", Disabled: k.Control.Disabled,
			Prohibited: k.Control.Prohibited, Load: k.Load}
		if k.Lease != nil && k.Lease.Held {
			kj.State, kj.Holder, kj.Token = "held", k.Lease.Holder, k.Lease.Token
			kj.Worker = cluster.HeldBy(k.Lease) // workers name themselves in their leases' metadata
			if count {
				holds[kj.Worker]++
			}
		}
		if count {
			targets[k.Target]++
		}
		out.Keys[i] = kj
	}
	drained := map[string]bool{}
	for _, w := range v.Drained {
		drained[w] = true
	}
	for _, w := range v.Workers {
		id := w.Meta.ID
		gw := wire.GroupWorker{ID: id, Status: w.Status, Capacity: w.Meta.Capacity,
			Draining: w.Meta.Draining, Drained: drained[id], Targets: targets[id], Holds: holds[id],
			Stuck: v.IsStuck(id), LoadCapacity: w.Meta.LoadCapacity}
		if x, ok := v.KeyLoads[id]; ok {
			gw.KeyLoad = &x
		}
		if x, ok := v.Totals[id]; ok {
			gw.Load = &x
		}
		out.Workers = append(out.Workers, gw)
	}
	return out
}

func groupName(r *http.Request) string { return mux.Vars(r)["name"] }

func (s *Server) putGroup(w http.ResponseWriter, r *http.Request) error {
	var body wire.GroupSpec
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	grace, err := parseDuration("stuck_grace", body.StuckGrace, 0)
	if err != nil {
		return err
	}
	spec := cluster.GroupSpec{Name: groupName(r), Keys: body.Keys, Prefix: body.Prefix, Count: body.Count,
		MaxPerWorker: body.MaxPerWorker, StuckGrace: grace, MinWorkers: body.MinWorkers}
	q := r.URL.Query()
	if q.Has("cas") {
		n, err := strconv.ParseUint(q.Get("cas"), 10, 64)
		if err != nil {
			return badRequest(wire.CodeInvalidQuery, "cas", fmt.Sprintf("cas: %q is not a modify index (an unsigned integer)", q.Get("cas")))
		}
		spec.CAS = n
	}
	if q.Has("replace") {
		v, err := strconv.ParseBool(q.Get("replace"))
		if err != nil {
			return badRequest(wire.CodeInvalidQuery, "replace", fmt.Sprintf("replace: %q is not true or false", q.Get("replace")))
		}
		if v && q.Has("cas") {
			return badRequest(wire.CodeInvalidQuery, "replace", "replace: give either cas or replace=true, not both")
		}
		spec.Replace = v
	}
	return s.writeGroup(w, r, func(ctx context.Context) (*fsm.Group, error) { return s.node.Groups.PutGroup(ctx, spec) })
}

func (s *Server) deleteGroup(w http.ResponseWriter, r *http.Request) error {
	return s.write(w, r, func(ctx context.Context) (any, error) { return nil, s.node.Groups.DeleteGroup(ctx, groupName(r)) })
}

// changeGroup answers a change of the group the path names, made by apply
// from the request's body, a B.
func changeGroup[B any](s *Server, w http.ResponseWriter, r *http.Request, apply func(ctx context.Context, name string, body B) (*fsm.Group, error)) error {
	var body B
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	return s.writeGroup(w, r, func(ctx context.Context) (*fsm.Group, error) { return apply(ctx, groupName(r), body) })
}

func (s *Server) groupKeys(w http.ResponseWriter, r *http.Request) error {
	return changeGroup(s, w, r, func(ctx context.Context, name string, body wire.GroupKeysBody) (*fsm.Group, error) {
		return s.node.Groups.GroupKeys(ctx, name, body.Add, body.Remove)
	})
}

func (s *Server) setGroupKeys(w http.ResponseWriter, r *http.Request) error {
	return changeGroup(s, w, r, func(ctx context.Context, name string, body wire.GroupKeySetBody) (*fsm.Group, error) {
		if body.Keys == nil {
			return nil, badRequest(wire.CodeInvalidBody, "keys", "keys: required, the group's whole key set ([] to empty it)")
		}
		return s.node.Groups.SetGroupKeys(ctx, name, *body.Keys)
	})
}

func (s *Server) maxPerWorker(w http.ResponseWriter, r *http.Request) error {
	return changeGroup(s, w, r, func(ctx context.Context, name string, body wire.MaxPerWorkerBody) (*fsm.Group, error) {
		return s.node.Groups.SetMaxPerWorker(ctx, name, body.MaxPerWorker)
	})
}

// setBalance sets how the balancer places a group's keys and answers the
// balance in force, defaults filled in.
func (s *Server) setBalance(w http.ResponseWriter, r *http.Request) error {
	var body wire.GroupBalance
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	interval, err := parseDuration("move_interval", body.MoveInterval, 0)
	if err != nil {
		return err
	}
	spec := cluster.BalanceSpec{By: body.By, Imbalance: body.Imbalance, MoveBudget: body.MoveBudget, MoveInterval: interval,
		Weights: body.Weights, MaxMoving: body.MaxMoving}
	return s.write(w, r, func(ctx context.Context) (any, error) {
		g, err := s.node.Groups.SetGroupBalance(ctx, groupName(r), spec)
		if err != nil {
			return nil, err
		}
		if g.Balance == nil { // by count: no setting of its own
			return wire.GroupBalance{By: "keys"}, nil
		}
		return balanceOut(*g.Balance), nil
	})
}

// balanceOut is b as the API shows it.
func balanceOut(b fsm.Balance) wire.GroupBalance {
	out := wire.GroupBalance{By: "keys", Imbalance: b.Threshold, MoveBudget: &b.MoveBudget, MoveInterval: b.MoveInterval.String(),
		Weights: b.Weights, MaxMoving: b.MaxMoving}
	if b.ByLoad {
		out.By = "load"
	}
	return out
}

// listGroups answers one page of the groups' summaries, by name (see
// list_page.go), streamed.
func (s *Server) listGroups(w http.ResponseWriter, r *http.Request) error {
	p, err := parsePage(r)
	if err != nil {
		return err
	}
	c := consistency(r)
	return s.blocking(w, r, func(ctx context.Context) (any, uint64, error) {
		groups, next, index, err := s.node.Groups.GroupsPage(ctx, p.After, p.Limit, c)
		if err != nil {
			return nil, 0, err
		}
		index = watchIndex(index)
		return listAnswer{field: "groups", n: len(groups), item: func(i int) any { return summary(groups[i]) }, index: index, after: next}, index, nil
	})
}

// getGroup answers a group with one page of its keys (see list_page.go).
// Keys the token may not read are left out, of the page and of the
// workers' counts, and counted in hidden_keys.
func (s *Server) getGroup(w http.ResponseWriter, r *http.Request) error {
	p, err := parsePage(r)
	if err != nil {
		return err
	}
	c := consistency(r)
	return s.blocking(w, r, func(ctx context.Context) (any, uint64, error) {
		v, err := s.node.Groups.GroupPage(ctx, groupName(r), p, c, readable(authz(r)))
		if err != nil {
			return nil, 0, err
		}
		out := groupOut(v)
		out.Next = encodeCursor(v.Next)
		// Owners change with leases; targets, controls and drains with
		// the placement state.
		index := max(v.ModifyIndex, s.node.Groups.LeaseIndex(), s.node.Groups.GroupIndex())
		return out, index, nil
	})
}

// assignment answers one page of a group's plan, by key (see
// list_page.go). Targets of keys the token may not read are left out and
// counted in the page's hidden_keys.
func (s *Server) assignment(w http.ResponseWriter, r *http.Request) error {
	p, err := parsePage(r)
	if err != nil {
		return err
	}
	c := consistency(r)
	worker := r.URL.Query().Get("worker")
	return s.blocking(w, r, func(ctx context.Context) (any, uint64, error) {
		v, err := s.node.Groups.AssignmentPage(ctx, groupName(r), worker, p, c, readable(authz(r)))
		if errors.Is(err, cluster.ErrNotFound) {
			return nil, watchIndex(v.Index), err // block until the group appears
		}
		if err != nil {
			return nil, 0, err
		}
		return wire.Assignment{Group: groupName(r), Assignment: v.Plan, Prepare: v.Prepare, Index: v.Index, Next: encodeCursor(v.Next),
			HiddenKeys: v.Hidden}, v.Index, nil
	})
}

// getControl answers a key's controls, as every read: with the index and
// the staleness headers, and blocking with index and wait. Its index is
// that of the last change of the placement state (groups, controls and
// drains): a key's controls keep no index of their own.
func (s *Server) getControl(w http.ResponseWriter, r *http.Request) error {
	key := pathKey(r)
	c := consistency(r)
	return s.blocking(w, r, func(ctx context.Context) (any, uint64, error) {
		// The index before the controls: a change between the two reads
		// then ends the next blocking wait at once instead of being missed.
		index := watchIndex(s.node.Placement.GroupIndex())
		ctl, err := s.node.Placement.KeyControl(ctx, key, c)
		if err != nil {
			return nil, 0, err
		}
		return controlOut(key, ctl), index, nil
	})
}

// putControl replaces the controls of the path's key. Its body holds the
// controls alone (wire.KeyControlBody): a key in the body, or an
// answer's ended, is an unknown field.
func (s *Server) putControl(w http.ResponseWriter, r *http.Request) error {
	return changeControl(s, w, r, func(ctx context.Context, key string, body wire.KeyControlBody, force bool) (fsm.KeyControl, []cluster.EndedLease, error) {
		ended, err := s.node.Placement.SetKeyControl(ctx, key, fsm.KeyControl{Disabled: body.Disabled, Prohibited: body.Prohibited}, force)
		if err != nil {
			return fsm.KeyControl{}, nil, err
		}
		// Answer the controls as stored (sorted, unique), as GET and PATCH do.
		stored, err := s.node.Placement.KeyControl(ctx, key, cluster.Stale)
		return stored, ended, err
	})
}

func (s *Server) editControl(w http.ResponseWriter, r *http.Request) error {
	return changeControl(s, w, r, func(ctx context.Context, key string, body wire.KeyControlEdit, force bool) (fsm.KeyControl, []cluster.EndedLease, error) {
		return s.node.Placement.EditKeyControl(ctx, key, cluster.ControlEdit{Disabled: body.Disabled, Prohibit: body.Prohibit, Allow: body.Allow, Force: force})
	})
}

// changeControl decodes the body of a change of the path key's controls,
// reads its force, makes the change within the write timeout, and answers
// the controls and the leases they ended, if any. An ended lease of a key
// the request's token may not read is answered without its holder and
// token (revokedOut).
func changeControl[B any](s *Server, w http.ResponseWriter, r *http.Request,
	change func(ctx context.Context, key string, body B, force bool) (fsm.KeyControl, []cluster.EndedLease, error)) error {
	var body B
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	force, err := controlForce(r)
	if err != nil {
		return err
	}
	return s.write(w, r, func(ctx context.Context) (any, error) {
		ctl, ended, err := change(ctx, pathKey(r), body, force)
		out := controlOut(pathKey(r), ctl)
		if len(ended) > 0 {
			out.Ended = revokedOut(ended, readable(authz(r)))
		}
		return out, err
	})
}

// controlForce reads the force parameter of a key control. A forced
// disable or prohibit frees the holder's lease at once, as a forced revoke
// does, so it also needs the revoke right on the key (the route itself
// needs groups). Without force the lease only ends at its holder's
// deadline, which never produces two holders.
func controlForce(r *http.Request) (bool, error) {
	force, err := parseForce(r)
	if err != nil || !force {
		return false, err
	}
	return true, authz(r).Allow(fsm.RightRevoke, "key", pathKey(r))
}

func controlOut(key string, c fsm.KeyControl) wire.KeyControl {
	p := c.Prohibited
	if p == nil {
		p = []string{}
	}
	return wire.KeyControl{Key: key, Disabled: c.Disabled, Prohibited: p}
}

func (s *Server) drainWorker(w http.ResponseWriter, r *http.Request) error {
	body := wire.DrainBody{}
	if err := decodeOptionalBody(r, &body); err != nil {
		return err
	}
	force, err := parseForce(r)
	if err != nil {
		return err
	}
	draining := body.Draining == nil || *body.Draining
	return s.write(w, r, func(ctx context.Context) (any, error) {
		warnings, err := s.node.Placement.DrainWorker(ctx, pathVar(r, "id"), draining, force)
		if warnings == nil {
			warnings = []string{}
		}
		return wire.DrainResult{Worker: pathVar(r, "id"), Draining: draining, Warnings: warnings}, err
	})
}

// listWorkers answers GET /v1/workers[?id=]: every worker, or the one
// named by id (an empty list when nothing knows it). A blocking read ends
// on a gossip change too: a worker that dies holding nothing changes no
// index.
func (s *Server) listWorkers(w http.ResponseWriter, r *http.Request) error {
	c := consistency(r)
	id := r.URL.Query().Get("id")
	page, err := parsePage(r)
	if err != nil {
		return err
	}
	return s.blockingOr(w, r, s.node.Members.MembersChanged, func(ctx context.Context) (any, uint64, error) {
		views, next, index, err := s.node.Placement.Workers(ctx, c, id, page.After, page.Limit)
		if err != nil {
			return nil, 0, err
		}
		out := wire.WorkerList{Workers: []wire.WorkerInfo{}, Index: watchIndex(index), Next: encodeCursor(next)}
		for _, v := range views {
			wi := wire.WorkerInfo{ID: v.ID, Status: v.Status, Addr: v.Addr, Groups: v.Groups, Capacity: v.Capacity,
				Draining: v.Draining, Drained: v.Drained, Keys: []wire.WorkerGroupKeys{}}
			for _, k := range v.Keys {
				wi.Keys = append(wi.Keys, wire.WorkerGroupKeys{Group: k.Group, Targets: k.Targets, Holds: k.Holds})
			}
			out.Workers = append(out.Workers, wi)
		}
		return out, out.Index, nil
	})
}

// placementHealth answers GET /v1/health/placement on the leader: 200 with
// ok true or false (the body says what is wrong), so that a monitor reads
// the report rather than a status.
func (s *Server) placementHealth(w http.ResponseWriter, r *http.Request) error {
	threshold, err := parseDuration("threshold", r.URL.Query().Get("threshold"), 0)
	if err != nil {
		return err
	}
	rep, err := s.node.Groups.PlacementHealth(r.Context(), threshold)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, placementHealthOut(rep, time.Now()))
	return nil
}

func placementHealthOut(rep cluster.PlacementReport, now time.Time) wire.PlacementHealth {
	out := wire.PlacementHealth{OK: rep.OK(), Truncated: rep.Truncated,
		Unowned: []wire.UnownedKey{}, Stuck: []wire.StuckWorker{}, BelowMin: []wire.GroupBelowMin{}, Stale: []wire.StaleLease{},
		Groups: []wire.GroupHealth{}, Controlled: []wire.ControlledKey{}}
	if rep.Threshold > 0 {
		out.Threshold = rep.Threshold.String()
	}
	for _, k := range rep.Unowned {
		out.Unowned = append(out.Unowned, wire.UnownedKey{Group: k.Group, Key: k.Key, Target: k.Target,
			UnownedFor: k.For.Round(time.Millisecond).String(), Overdue: k.Overdue})
	}
	for _, st := range rep.Stuck {
		out.Stuck = append(out.Stuck, wire.StuckWorker{Group: st.Group, Worker: st.Worker,
			Since: now.Add(-st.For).UTC().Format(time.RFC3339), StuckFor: st.For.Round(time.Millisecond).String(),
			QuarantineLeft: st.QuarantineLeft.Round(time.Millisecond).String()})
	}
	for _, g := range rep.BelowMin {
		out.BelowMin = append(out.BelowMin, wire.GroupBelowMin{Group: g.Group, Workers: g.Workers, MinWorkers: g.MinWorkers})
	}
	for _, l := range rep.Stale {
		out.Stale = append(out.Stale, wire.StaleLease{Key: l.Key, Holder: l.Holder, Token: l.Token, TTL: l.TTL.String(),
			SinceRenewal: l.SinceRenewal.Round(time.Millisecond).String()})
	}
	for _, g := range rep.Groups {
		out.Groups = append(out.Groups, wire.GroupHealth{Group: g.Group, Keys: g.Keys, DisabledKeys: g.DisabledKeys,
			ProhibitedKeys: g.ProhibitedKeys, UnownedKeys: g.UnownedKeys, UnplannedKeys: g.UnplannedKeys,
			LiveWorkers: g.LiveWorkers, Workers: g.Workers, DrainingWorkers: g.Draining, StuckWorkers: g.Stuck,
			NotAdmittedWorkers: g.NotAdmitted, MinWorkers: g.MinWorkers, MaxPerWorker: g.MaxPerWorker,
			Room: g.Room, RoomPerWorkerMin: g.RoomMin, RoomPerWorkerMax: g.RoomMax})
	}
	for _, k := range rep.Controlled {
		out.Controlled = append(out.Controlled, wire.ControlledKey{Group: k.Group, Key: k.Key, Disabled: k.Disabled, Prohibited: k.Prohibited})
	}
	return out
}
