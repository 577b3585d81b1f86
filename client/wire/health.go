package wire

// PlacementHealth is the answer of GET /v1/health/placement: what the
// leader knows of keys that no worker holds and of workers that do not
// take their keys. The server answers 200 whether or not something is
// wrong; OK says which. Durations are counted on the leader's clock since
// it became leader at most.
type PlacementHealth struct {
	// OK is false when a key has been unowned for longer than its group's
	// stuck grace, a worker is stuck, a group has fewer workers than its
	// min_workers, or a lease was not renewed for longer than Threshold.
	OK bool `json:"ok"`
	// Unowned are the enabled keys of groups that no lease holds; Overdue
	// ones have been so for longer than their group's grace.
	Unowned  []UnownedKey    `json:"unowned"`
	Stuck    []StuckWorker   `json:"stuck"`
	BelowMin []GroupBelowMin `json:"below_min_workers"`
	Stale    []StaleLease    `json:"stale_leases"`
	// Threshold is the stale threshold applied, or "" for the default:
	// two thirds of each lease's TTL (its holder missed two renewals).
	Threshold string `json:"threshold,omitempty"`
	// Truncated: a list was cut at 1000 entries.
	Truncated bool `json:"truncated,omitempty"`
}

// UnownedKey is a key of a group that no lease holds.
type UnownedKey struct {
	Group string `json:"group"`
	Key   string `json:"key"`
	// Target is the worker the plan targets the key at ("" when none).
	Target     string `json:"target,omitempty"`
	UnownedFor string `json:"unowned_for"`
	Overdue    bool   `json:"overdue,omitempty"`
}

// StuckWorker is a worker that the balancer marked stuck in a group.
type StuckWorker struct {
	Group  string `json:"group"`
	Worker string `json:"worker"`
	// Since is when it was marked stuck (the leader's wall clock, RFC
	// 3339), StuckFor how long ago that was, and QuarantineLeft how long
	// it gets no new keys at least.
	Since          string `json:"since"`
	StuckFor       string `json:"stuck_for"`
	QuarantineLeft string `json:"quarantine_left"`
}

// GroupBelowMin is a group with fewer workers able to take keys (alive,
// not draining or drained, admitted, not stuck) than its min_workers.
type GroupBelowMin struct {
	Group      string `json:"group"`
	Workers    int    `json:"workers"`
	MinWorkers int    `json:"min_workers"`
}

// StaleLease is a held lease not renewed for longer than the threshold.
type StaleLease struct {
	Key          string `json:"key"`
	Holder       string `json:"holder"`
	Token        uint64 `json:"token"`
	TTL          string `json:"ttl"`
	SinceRenewal string `json:"since_renewal"`
}
