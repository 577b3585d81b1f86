package check

import (
	"time"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/fsm"
)

// The defaults and bounds of a group's balance by load (BalanceSpec).
const (
	DefaultImbalance    = wire.DefaultImbalance
	DefaultMoveBudget   = wire.DefaultMoveBudget
	DefaultMoveInterval = 30 * time.Second // wire.DefaultMoveInterval
	MinImbalance        = 1.05
	MaxImbalance        = 10
	MaxMoveBudget       = 1024
	MinMoveInterval     = time.Second
	MaxMoveInterval     = time.Hour
)

// BalanceSpec is a group's balance as an operator sets it: By is "keys"
// (or "": by count) or "load"; zero Imbalance and MoveInterval and a nil
// MoveBudget take the defaults.
type BalanceSpec struct {
	By           string
	Imbalance    float64
	MoveBudget   *int
	MoveInterval time.Duration
	Weights      map[string]float64
	// MaxMoving is the availability budget: at most this many keys of the
	// group unowned or moving at once for planned moves (0: no bound).
	MaxMoving int
}

// Balance checks spec and returns the balance it sets, defaults filled
// in: Imbalance within [MinImbalance, MaxImbalance], MoveBudget within [0,
// MaxMoveBudget] (0: no key moves for balance, only keys without an owner
// are placed), MoveInterval within [MinMoveInterval, MaxMoveInterval], MaxMoving
// within [0, MaxGroupKeys], at most MaxGroupKeys weights, each of a valid key and within (0,
// wire.MaxLoad].
func Balance(spec BalanceSpec) (fsm.Balance, error) {
	b := fsm.Balance{Threshold: DefaultImbalance, MoveBudget: DefaultMoveBudget, MoveInterval: DefaultMoveInterval}
	switch spec.By {
	case "", "keys":
		// The settings of placement by load would be kept and ignored.
		for field, set := range map[string]bool{"imbalance": spec.Imbalance != 0, "move_budget": spec.MoveBudget != nil,
			"move_interval": spec.MoveInterval != 0, "weights": len(spec.Weights) > 0} {
			if set {
				return fsm.Balance{}, Invalid(field, "applies to placement by load only (by: load)")
			}
		}
	case "load":
		b.ByLoad = true
	default:
		return fsm.Balance{}, Invalid("by", "%q is neither keys nor load", spec.By)
	}
	if spec.Imbalance != 0 {
		if !(spec.Imbalance >= MinImbalance && spec.Imbalance <= MaxImbalance) {
			return fsm.Balance{}, Invalid("imbalance", "%v is outside [%v, %v]", spec.Imbalance, MinImbalance, MaxImbalance)
		}
		b.Threshold = spec.Imbalance
	}
	if spec.MoveBudget != nil {
		if *spec.MoveBudget < 0 || *spec.MoveBudget > MaxMoveBudget {
			return fsm.Balance{}, Invalid("move_budget", "%d is outside [0, %d]", *spec.MoveBudget, MaxMoveBudget)
		}
		b.MoveBudget = *spec.MoveBudget
	}
	if spec.MoveInterval != 0 {
		if spec.MoveInterval < MinMoveInterval || spec.MoveInterval > MaxMoveInterval {
			return fsm.Balance{}, Invalid("move_interval", "%v is outside [%v, %v]", spec.MoveInterval, MinMoveInterval, MaxMoveInterval)
		}
		b.MoveInterval = spec.MoveInterval
	}
	if spec.MaxMoving < 0 || spec.MaxMoving > MaxGroupKeys {
		return fsm.Balance{}, Invalid("max_moving", "%d is outside [0, %d]", spec.MaxMoving, MaxGroupKeys)
	}
	b.MaxMoving = spec.MaxMoving
	if len(spec.Weights) > MaxGroupKeys {
		return fsm.Balance{}, Invalid("weights", "%d weights, the limit is %d", len(spec.Weights), MaxGroupKeys)
	}
	for k, w := range spec.Weights {
		if err := fsm.ValidateKey(k); err != nil {
			return fsm.Balance{}, Invalid("weights", "key %q: %v", k, err)
		}
		if p := wire.LoadProblem(w); p != "" || w == 0 {
			return fsm.Balance{}, Invalid("weights", "the weight of %q, %v, is outside (0, %g]", k, w, float64(wire.MaxLoad))
		}
		if b.Weights == nil {
			b.Weights = make(map[string]float64, len(spec.Weights))
		}
		b.Weights[k] = w
	}
	return b, nil
}
