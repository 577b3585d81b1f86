package httpapi

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
)

// eventsQuery is a parsed GET /v1/events.
type eventsQuery struct {
	after uint64
	// block: an index was given, so the answer waits for an event after it.
	block  bool
	filter fsm.EventFilter
	limit  int
	wait   time.Duration
}

func (s *Server) parseEventsQuery(r *http.Request) (eventsQuery, error) {
	q := r.URL.Query()
	out := eventsQuery{filter: fsm.EventFilter{Prefix: q.Get("prefix")}, limit: cluster.MaxEventsAnswer}
	if q.Has("index") {
		// An index asks the answer to wait, so an empty one is refused
		// rather than read as 0, as the other reads do.
		v := q.Get("index")
		if v == "" {
			return out, badIndex(v)
		}
		n, err := parseIndex(v)
		if err != nil {
			return out, err
		}
		out.after, out.block = n, true
	}
	for _, list := range q["type"] {
		for _, name := range strings.Split(list, ",") {
			t, err := fsm.ParseEventType(strings.TrimSpace(name))
			if err != nil {
				return out, badRequest(wire.CodeInvalidQuery, "type", "type: "+err.Error())
			}
			if !slices.Contains(out.filter.Types, t) { // at most one of each
				out.filter.Types = append(out.filter.Types, t)
			}
		}
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > cluster.MaxEventsAnswer {
			return out, badRequest(wire.CodeInvalidQuery, "limit", fmt.Sprintf("limit: %q must be an integer from 1 to %d", v, cluster.MaxEventsAnswer))
		}
		out.limit = n
	}
	wait, err := s.blockingWait(q)
	out.wait = wait
	return out, err
}

// events answers GET /v1/events from this node's own history (any node,
// like a stale read). Without index it answers at once with the oldest
// events the history holds; with index=N it waits until an event after N
// that the request may see exists, or the wait ends. Events on keys,
// groups or workers the token may not read are left out.
func (s *Server) events(w http.ResponseWriter, r *http.Request) error {
	eq, err := s.parseEventsQuery(r)
	if err != nil {
		return err
	}
	after := eq.after
	if !eq.block {
		after = s.node.Events.EventBase()
	}
	a := authz(r)
	timeout := time.After(eq.wait)
	for {
		changed := s.node.Replica.Changed() // before reading: no change is missed
		evs, next, err := s.node.Events.Events(after, eq.filter, eq.limit)
		var ce *fsm.CompactedError
		if errors.As(err, &ce) {
			w.Header().Set(wire.HeaderOldestIndex, strconv.FormatUint(ce.Oldest, 10))
			s.readHeaders(w, ce.Oldest)
			writeJSON(w, http.StatusGone, wire.CompactedBody{
				ErrorBody:   wire.ErrorBody{Error: wire.CodeCompacted, Message: ce.Error(), Field: "index"},
				OldestIndex: ce.Oldest,
			})
			return nil
		}
		if err != nil {
			return err
		}
		out := wire.EventList{Events: make([]wire.Event, 0, len(evs)), Index: next}
		for _, e := range evs {
			if visible(a, e) {
				out.Events = append(out.Events, eventOut(e))
			}
		}
		if len(out.Events) > 0 || !eq.block {
			return s.writeRead(w, next, out)
		}
		after = next // nothing this request may see up to next
		if len(evs) > 0 {
			continue // events it may not see: there may be more after them
		}
		select {
		case <-changed:
			continue
		case <-timeout:
		case <-r.Context().Done():
			return r.Context().Err()
		}
		return s.writeRead(w, after, wire.EventList{Events: []wire.Event{}, Index: after})
	}
}

// visible reports whether the request may see e: read on the key of a
// lease or control event; read on the group (or the operator right) for
// group_changed, assigned and stuck, and for assigned read on its key too
// (as the group's answers leave out the keys a token may not read); read
// on the worker id (or the operator right) for drained.
func visible(a *cluster.Authorizer, e fsm.Event) bool {
	if !a.Enabled() {
		return true
	}
	switch e.Type {
	case fsm.EventAssigned, fsm.EventGroupChanged, fsm.EventStuck:
		if e.Type == fsm.EventAssigned && e.Key != "" && a.Allow(fsm.RightRead, "key", e.Key) != nil {
			return false
		}
		return a.Allow(fsm.RightRead, "group", e.Group) == nil || a.AllowCluster(fsm.RightOperator) == nil
	case fsm.EventDrained:
		return a.Allow(fsm.RightRead, "worker", e.Worker) == nil || a.AllowCluster(fsm.RightOperator) == nil
	}
	return a.Allow(fsm.RightRead, "key", e.Key) == nil
}

// eventOut is an event as the API answers it.
func eventOut(e fsm.Event) wire.Event {
	out := wire.Event{
		Index: e.Index, Term: e.Term, Type: e.Type.String(),
		Key: e.Key, Holder: e.Holder, Token: e.Token,
		Group: e.Group, Worker: e.Worker, By: e.By, Reason: e.Reason,
		Disabled: e.Disabled, Prohibited: e.Prohibited,
	}
	if e.At != 0 {
		out.Time = time.Unix(0, e.At).UTC()
	}
	return out
}
