package check

import (
	"fmt"
	"time"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/fsm"
)

// MaxGroupKeys bounds the keys of one group.
const MaxGroupKeys = 16384

// MaxMinWorkers bounds a group's MinWorkers.
const MaxMinWorkers = 10000

// GroupSpec defines a group: explicit keys, or Count keys named Prefix0 …
// Prefix(Count-1).
type GroupSpec struct {
	Name         string
	Keys         []string
	Prefix       string
	Count        int
	MaxPerWorker int
	// CAS is the group's expected modify index: 0 creates the group only
	// if it does not exist; N > 0 replaces it only if its modify index
	// (which the balancer's plan changes too) is N. Ignored with Replace.
	CAS uint64
	// Replace creates the group or replaces whatever is there.
	Replace bool
	// StuckGrace is how long a key may stay free while targeted at a live
	// worker before the balancer marks the worker stuck: 0 (twice the
	// largest TTL of the group's leases) or within
	// [placement.MinStuckGrace, placement.MaxStuckGrace].
	StuckGrace time.Duration
	// MinWorkers is how many live workers the group should have, for the
	// placement health report; 0 means no minimum, at most MaxMinWorkers.
	MinWorkers int
}

// Name checks a group name or a worker id: the rule of keys without "/"
// (1 to 256 bytes of [A-Za-z0-9._:-]). A slash would make the name two
// path segments in the API, and a worker's leases are held as
// "<id>#<suffix>", so an id with any other byte could be mistaken for
// another's.
func Name(field, name string) error {
	if p := wire.NameProblem(name); p != "" {
		return Invalid(field, "%s", p)
	}
	return nil
}

// Group checks spec and returns the group it defines, its keys spelled
// out; a stuck grace other than 0 must be within [minGrace, maxGrace].
func Group(spec GroupSpec, minGrace, maxGrace time.Duration) (fsm.GroupDefine, error) {
	if err := Name("name", spec.Name); err != nil {
		return fsm.GroupDefine{}, err
	}
	keys := spec.Keys
	switch {
	case len(keys) > 0 && spec.Count > 0:
		return fsm.GroupDefine{}, Invalid("count", "give either keys or count, not both")
	case spec.Count < 0 || spec.Count > MaxGroupKeys:
		return fsm.GroupDefine{}, Invalid("count", "%d is outside [0, %d]", spec.Count, MaxGroupKeys)
	case spec.Count > 0:
		for i := 0; i < spec.Count; i++ {
			keys = append(keys, fmt.Sprintf("%s%d", spec.Prefix, i))
		}
	case spec.Prefix != "":
		return fsm.GroupDefine{}, Invalid("prefix", "a prefix needs a count")
	}
	if len(keys) > MaxGroupKeys {
		return fsm.GroupDefine{}, Invalid("keys", "%d keys, the limit is %d", len(keys), MaxGroupKeys)
	}
	for _, k := range keys {
		if err := fsm.ValidateKey(k); err != nil {
			return fsm.GroupDefine{}, &InvalidError{Field: "keys", Err: err}
		}
	}
	if spec.MaxPerWorker < 0 {
		return fsm.GroupDefine{}, Invalid("max_per_worker", "%d is negative", spec.MaxPerWorker)
	}
	if g := spec.StuckGrace; g != 0 && (g < minGrace || g > maxGrace) {
		return fsm.GroupDefine{}, Invalid("stuck_grace", "%v is outside [%v, %v] (0: twice the largest TTL of the group's leases)", g, minGrace, maxGrace)
	}
	if spec.MinWorkers < 0 || spec.MinWorkers > MaxMinWorkers {
		return fsm.GroupDefine{}, Invalid("min_workers", "%d is outside [0, %d]", spec.MinWorkers, MaxMinWorkers)
	}
	return fsm.GroupDefine{Name: spec.Name, Keys: keys, MaxPerWorker: spec.MaxPerWorker,
		StuckGrace: spec.StuckGrace, MinWorkers: spec.MinWorkers}, nil
}
