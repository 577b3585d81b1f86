package wire

// GroupSpec defines a group: explicit Keys, or Count keys named Prefix0 …
// Prefix(Count-1). MaxPerWorker bounds the keys of one worker (0: no bound
// beyond an even spread). StuckGrace is how long a key may stay free while
// targeted at a live worker before the balancer marks the worker stuck and
// moves its keys (a duration; "" or "0s": twice the largest TTL of the
// group's leases). MinWorkers is how many workers able to take keys the
// group should have; fewer is reported by GET /v1/health/placement.
type GroupSpec struct {
	Keys         []string `json:"keys,omitempty"`
	Prefix       string   `json:"prefix,omitempty"`
	Count        int      `json:"count,omitempty"`
	MaxPerWorker int      `json:"max_per_worker,omitempty"`
	StuckGrace   string   `json:"stuck_grace,omitempty"`
	MinWorkers   int      `json:"min_workers,omitempty"`
}

// GroupBalance is how the balancer places a group's keys: the body of PUT
// /v1/groups/{name}/balance and Group.Balance. By is "keys" (the default:
// as even a number of keys per worker as their capacities allow) or
// "load": each worker gets a share of the group's load in proportion to
// its MemberMeta.LoadCapacity, and keys move only while a worker's load is
// above Imbalance times its share (or below its share divided by
// Imbalance), at most MoveBudget keys per MoveInterval (a duration). A
// key's load is its Weights entry when the operator set one, else the
// leader's average of its reports (GroupKey.Load), else the group's mean.
// In a body, a zero Imbalance, a nil MoveBudget and an empty MoveInterval
// take the defaults (1.2, 16, "30s"); answers carry the values in force.
// MaxMoving, by count or by load, is the group's availability budget: the
// balancer moves a key away from a live worker that holds it only while
// fewer than MaxMoving keys of the group are unowned or on their way to a
// new target (0, the default: no bound), so a drain or a rebalance leaves
// at most MaxMoving keys without a working owner at once.
type GroupBalance struct {
	By           string             `json:"by"`
	Imbalance    float64            `json:"imbalance,omitempty"`
	MoveBudget   *int               `json:"move_budget,omitempty"`
	MoveInterval string             `json:"move_interval,omitempty"`
	Weights      map[string]float64 `json:"weights,omitempty"`
	MaxMoving    int                `json:"max_moving,omitempty"`
}

// GroupKey is one key of a group: the balancer's target and the actual
// holder of its lease.
type GroupKey struct {
	Key    string `json:"key"`
	Target string `json:"target,omitempty"`
	// Preparing is the worker that prepares the key before it moves there
	// (a warm hand-off); Target is still the key's holder meanwhile.
	Preparing string `json:"preparing,omitempty"`
	Holder    string `json:"holder,omitempty"`
	// Worker is the id of the worker that holds the key (from its lease's
	// "worker" metadata), or the holder when the lease names none.
	Worker     string   `json:"worker,omitempty"`
	Token      uint64   `json:"token,omitempty"`
	State      string   `json:"state"`
	Disabled   bool     `json:"disabled,omitempty"`
	Prohibited []string `json:"prohibited,omitempty"`
	// Load is the leader's decayed average of the load that the key's
	// holders reported with their renewals (LeaseRef.Load); absent when
	// none reported one lately, or when a follower answered (stale reads).
	Load *float64 `json:"load,omitempty"`
}

// GroupWorker is a live worker of a group with its number of target and
// held keys.
type GroupWorker struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Capacity int    `json:"capacity,omitempty"`
	Draining bool   `json:"draining,omitempty"`
	Drained  bool   `json:"drained,omitempty"`
	Targets  int    `json:"targets"`
	Holds    int    `json:"holds"`
	// Stuck: the balancer found the worker not taking its targets; it
	// keeps what it holds and gets no new keys for a while.
	Stuck bool `json:"stuck,omitempty"`
	// LoadCapacity is the load the worker announced it can carry (0:
	// none). KeyLoad sums the loads (GroupKey.Load) of the group's keys it
	// holds; Load is the total it reported (RenewManyBody.Load). Both are
	// absent when unknown (no report, or a follower answered).
	LoadCapacity float64  `json:"load_capacity,omitempty"`
	KeyLoad      *float64 `json:"key_load,omitempty"`
	Load         *float64 `json:"load,omitempty"`
}

// Group is a group with every key's target and owner.
type Group struct {
	Name         string `json:"name"`
	MaxPerWorker int    `json:"max_per_worker"`
	// KeyCount is the number of the group's keys that the token may read,
	// over every page (Keys holds one page of them).
	KeyCount    int           `json:"key_count"`
	Keys        []GroupKey    `json:"keys"`
	Workers     []GroupWorker `json:"workers"`
	ModifyIndex uint64        `json:"modify_index"`
	AssignIndex uint64        `json:"assign_index"`
	// StuckGrace is the group's own grace ("" when it uses the default),
	// MinWorkers its minimum (0: none), Stuck the workers the balancer
	// marked stuck (sorted; they need not be alive).
	StuckGrace string   `json:"stuck_grace,omitempty"`
	MinWorkers int      `json:"min_workers,omitempty"`
	Stuck      []string `json:"stuck,omitempty"`
	// Balance is how the balancer places the keys; absent: by count.
	Balance *GroupBalance `json:"balance,omitempty"`
	// Next, in one page of the group (GetPage), is the cursor of the next
	// page of Keys; empty after the last one. The workers' counts cover
	// every key of the group that the token may read, on every page.
	Next string `json:"next"`
	// HiddenKeys is the number of the group's keys (of the whole group,
	// on every page) that the answer left out, from Keys and from the
	// workers' counts, because the token may not read them (ACLs on).
	HiddenKeys int `json:"hidden_keys"`
}

// KeyControl is an operator's controls of a key. Key names it in answers;
// SetControl ignores it, and Ended, and sends a wire.KeyControlBody.
type KeyControl struct {
	Key        string   `json:"key,omitempty"`
	Disabled   bool     `json:"disabled"`
	Prohibited []string `json:"prohibited"`
	// Ended, in the answer of a change only, is the lease the change
	// ended: its holder is prohibited, or the key disabled (see
	// RevokedLease).
	Ended []RevokedLease `json:"ended,omitempty"`
}

// PreparedBody is the body of POST /v1/groups/{name}/prepared: a worker's
// word that it prepared keys the plan named it to prepare (Assignment's
// Prepare), at most MaxPrepareKeys. The answer is the same body with the
// keys that are now targeted at the worker (the others were no longer
// being prepared for it).
type PreparedBody struct {
	Worker string   `json:"worker"`
	Keys   []string `json:"keys"`
}
