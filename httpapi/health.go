package httpapi

import (
	"net/http"
	"time"

	"github.com/tenure-io/tenure/client/wire"

	"github.com/tenure-io/tenure/cluster"
)

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
