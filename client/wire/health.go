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
	// Groups sums up every group: its keys, its controls and the workers
	// that may take them, so that the cause of unowned keys can be named.
	Groups []GroupHealth `json:"groups"`
	// Controlled are the keys of groups that are disabled or prohibit a
	// holder: controls that are easily forgotten. They do not make OK
	// false: an operator set them.
	Controlled []ControlledKey `json:"controlled_keys"`
	// Threshold is the stale threshold applied, or "" for the default:
	// two thirds of each lease's TTL (its holder missed two renewals).
	Threshold string `json:"threshold,omitempty"`
	// Truncated: a list was cut at 1000 entries (the counts of Groups are
	// never cut).
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

// GroupHealth sums up one group as the leader sees it.
type GroupHealth struct {
	Group string `json:"group"`
	// Keys counts the keys of the group; DisabledKeys those disabled,
	// ProhibitedKeys those that prohibit at least one holder.
	Keys           int `json:"keys"`
	DisabledKeys   int `json:"disabled_keys"`
	ProhibitedKeys int `json:"prohibited_keys"`
	// UnownedKeys counts the enabled keys that no lease holds, and
	// UnplannedKeys those of them that the plan targets at no worker (no
	// worker may take them, or the workers have no room left).
	UnownedKeys   int `json:"unowned_keys"`
	UnplannedKeys int `json:"unplanned_keys"`
	// LiveWorkers counts the workers alive on gossip that serve the
	// group; Workers those of them that may be given keys (not draining
	// or drained, admitted, not stuck), as GroupBelowMin counts them.
	// DrainingWorkers, StuckWorkers and NotAdmittedWorkers count the
	// live workers held back for each reason.
	LiveWorkers        int `json:"live_workers"`
	Workers            int `json:"workers"`
	DrainingWorkers    int `json:"draining_workers"`
	StuckWorkers       int `json:"stuck_workers"`
	NotAdmittedWorkers int `json:"not_admitted_workers"`
	MinWorkers         int `json:"min_workers"`
	MaxPerWorker       int `json:"max_per_worker"`
	// Room is the most keys the Workers may be given together: each one's
	// capacity and the group's max_per_worker, when set, bound it, and the
	// enabled keys bound every one. RoomPerWorkerMin and RoomPerWorkerMax
	// are the smallest and largest of those bounds (0 without Workers).
	Room             int `json:"room"`
	RoomPerWorkerMin int `json:"room_per_worker_min"`
	RoomPerWorkerMax int `json:"room_per_worker_max"`
}

// ControlledKey is a key of a group that an operator disabled or on which
// they prohibited holders.
type ControlledKey struct {
	Group      string   `json:"group"`
	Key        string   `json:"key"`
	Disabled   bool     `json:"disabled,omitempty"`
	Prohibited []string `json:"prohibited,omitempty"`
}
