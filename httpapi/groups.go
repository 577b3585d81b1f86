package httpapi

import (
	"context"
	"errors"
	"net/http"

	"github.com/gorilla/mux"
	"github.com/tenure-io/tenure/client"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
)

func summary(g *fsm.Group) client.GroupSummary {
	return client.GroupSummary{Name: g.Name, Keys: len(g.Keys), Assigned: len(g.Assignment), MaxPerWorker: g.MaxPerWorker, ModifyIndex: g.ModifyIndex}
}

func groupOut(v cluster.GroupView) client.Group {
	out := client.Group{Name: v.Name, MaxPerWorker: v.MaxPerWorker, ModifyIndex: v.ModifyIndex, AssignIndex: v.AssignIndex,
		Keys: make([]client.GroupKey, len(v.Keys)), Workers: []client.GroupWorker{}}
	targets, holds := map[string]int{}, map[string]int{}
	for i, k := range v.Keys {
		kj := client.GroupKey{Key: k.Key, Target: k.Target, State: "free", Disabled: k.Control.Disabled, Prohibited: k.Control.Prohibited}
		if k.Lease != nil && k.Lease.Held {
			kj.State, kj.Holder, kj.Token = "held", k.Lease.Holder, k.Lease.Token
			// Workers name themselves in their leases' metadata.
			kj.Worker = k.Lease.Metadata["worker"]
			if kj.Worker == "" {
				kj.Worker = k.Lease.Holder
			}
			holds[kj.Worker]++
		}
		targets[k.Target]++
		out.Keys[i] = kj
	}
	drained := map[string]bool{}
	for _, w := range v.Drained {
		drained[w] = true
	}
	for _, w := range v.Workers {
		out.Workers = append(out.Workers, client.GroupWorker{ID: w.Meta.ID, Status: w.Status, Capacity: w.Meta.Capacity,
			Draining: w.Meta.Draining, Drained: drained[w.Meta.ID], Targets: targets[w.Meta.ID], Holds: holds[w.Meta.ID]})
	}
	return out
}

func groupName(r *http.Request) string { return mux.Vars(r)["name"] }

func (s *Server) putGroup(w http.ResponseWriter, r *http.Request) error {
	var body client.GroupSpec
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	g, err := s.node.PutGroup(ctx, cluster.GroupSpec{Name: groupName(r), Keys: body.Keys, Prefix: body.Prefix, Count: body.Count, MaxPerWorker: body.MaxPerWorker})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, summary(g))
	return nil
}

func (s *Server) deleteGroup(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	if err := s.node.DeleteGroup(ctx, groupName(r)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) groupKeys(w http.ResponseWriter, r *http.Request) error {
	var body client.GroupKeysBody
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	g, err := s.node.GroupKeys(ctx, groupName(r), body.Add, body.Remove)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, summary(g))
	return nil
}

func (s *Server) maxPerWorker(w http.ResponseWriter, r *http.Request) error {
	var body client.MaxPerWorkerBody
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	g, err := s.node.SetMaxPerWorker(ctx, groupName(r), body.MaxPerWorker)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, summary(g))
	return nil
}

func (s *Server) listGroups(w http.ResponseWriter, r *http.Request) error {
	c := consistency(r)
	return s.blocking(w, r, func(ctx context.Context) (any, uint64, error) {
		groups, index, err := s.node.Groups(ctx, c)
		if err != nil {
			return nil, 0, err
		}
		out := client.GroupList{Groups: make([]client.GroupSummary, len(groups)), Index: watchIndex(index)}
		for i, g := range groups {
			out.Groups[i] = summary(g)
		}
		return out, out.Index, nil
	})
}

func (s *Server) getGroup(w http.ResponseWriter, r *http.Request) error {
	c := consistency(r)
	return s.blocking(w, r, func(ctx context.Context) (any, uint64, error) {
		v, err := s.node.Group(ctx, groupName(r), c)
		if err != nil {
			return nil, 0, err
		}
		out := groupOut(v)
		// Owners change with leases; targets, controls and drains with
		// the placement state.
		index := max(v.ModifyIndex, s.node.LeaseIndex(), s.node.GroupIndex())
		return out, index, nil
	})
}

func (s *Server) assignment(w http.ResponseWriter, r *http.Request) error {
	c := consistency(r)
	worker := r.URL.Query().Get("worker")
	return s.blocking(w, r, func(ctx context.Context) (any, uint64, error) {
		plan, index, err := s.node.Assignment(ctx, groupName(r), worker, c)
		if errors.Is(err, cluster.ErrNotFound) {
			return nil, watchIndex(index), err // block until the group appears
		}
		if err != nil {
			return nil, 0, err
		}
		return client.Assignment{Group: groupName(r), Assignment: plan, Index: index}, index, nil
	})
}

func (s *Server) getControl(w http.ResponseWriter, r *http.Request) error {
	key := pathKey(r)
	ctl, err := s.node.KeyControl(r.Context(), key, consistency(r))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, controlOut(key, ctl))
	return nil
}

func (s *Server) putControl(w http.ResponseWriter, r *http.Request) error {
	var body client.KeyControl
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	force, err := parseForce(r)
	if err != nil {
		return err
	}
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	ctl := fsm.KeyControl{Disabled: body.Disabled, Prohibited: body.Prohibited}
	ended, err := s.node.SetKeyControl(ctx, pathKey(r), ctl, force)
	if err != nil {
		return err
	}
	out := controlOut(pathKey(r), ctl)
	if len(ended) > 0 {
		out.Ended = revokedOut(ended)
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func controlOut(key string, c fsm.KeyControl) client.KeyControl {
	p := c.Prohibited
	if p == nil {
		p = []string{}
	}
	return client.KeyControl{Key: key, Disabled: c.Disabled, Prohibited: p}
}

func (s *Server) drainWorker(w http.ResponseWriter, r *http.Request) error {
	body := client.DrainBody{}
	if r.ContentLength != 0 {
		if err := decodeBody(r, &body); err != nil {
			return err
		}
	}
	draining := body.Draining == nil || *body.Draining
	ctx, cancel := s.writeCtx(r)
	defer cancel()
	if err := s.node.DrainWorker(ctx, pathVar(r, "id"), draining); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
