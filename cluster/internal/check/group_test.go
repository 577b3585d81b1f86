package check

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/fsm"
)

func TestGroup(t *testing.T) {
	g, err := Group(GroupSpec{Name: "g", Prefix: "k", Count: 3}, time.Second, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(g.Keys, ",") != "k0,k1,k2" {
		t.Errorf("keys %q, want k0,k1,k2", g.Keys)
	}
	for _, tt := range []struct {
		spec  GroupSpec
		field string
	}{
		{GroupSpec{Name: "a/b"}, "name"},
		{GroupSpec{Name: "g", Keys: []string{"k"}, Count: 1}, "count"},
		{GroupSpec{Name: "g", Prefix: "k"}, "prefix"},
		{GroupSpec{Name: "g", MaxPerWorker: -1}, "max_per_worker"},
		{GroupSpec{Name: "g", StuckGrace: time.Millisecond}, "stuck_grace"},
		{GroupSpec{Name: "g", MinWorkers: MaxMinWorkers + 1}, "min_workers"},
	} {
		_, err := Group(tt.spec, time.Second, time.Hour)
		var ie *InvalidError
		if !errors.As(err, &ie) || ie.Field != tt.field {
			t.Errorf("Group(%+v) = %v, want an invalid %s", tt.spec, err, tt.field)
		}
	}
}

// A balance names the field and the rule it breaks, fills in the
// defaults, and refuses the settings of placement by load on a group by
// count (they would be kept and ignored).
func TestBalanceRules(t *testing.T) {
	budget, negative := 4, -1
	if d, err := time.ParseDuration(wire.DefaultMoveInterval); err != nil || d != DefaultMoveInterval {
		t.Fatalf("wire.DefaultMoveInterval %q is not check.DefaultMoveInterval %v", wire.DefaultMoveInterval, DefaultMoveInterval)
	}
	b, err := Balance(BalanceSpec{By: "load", MoveBudget: &budget, MaxMoving: 3})
	if want := (fsm.Balance{ByLoad: true, Threshold: DefaultImbalance, MoveBudget: 4, MoveInterval: DefaultMoveInterval, MaxMoving: 3}); err != nil || !reflect.DeepEqual(b, want) {
		t.Errorf("Balance(by load, budget 4, max moving 3) = %+v, %v; want %+v", b, err, want)
	}
	for _, tc := range []struct {
		name  string
		spec  BalanceSpec
		field string
	}{
		{"unknown by", BalanceSpec{By: "weight"}, "by"},
		{"imbalance below 1.05", BalanceSpec{By: "load", Imbalance: 1.01}, "imbalance"},
		{"negative budget", BalanceSpec{By: "load", MoveBudget: &negative}, "move_budget"},
		{"interval under a second", BalanceSpec{By: "load", MoveInterval: time.Millisecond}, "move_interval"},
		{"zero weight", BalanceSpec{By: "load", Weights: map[string]float64{"k": 0}}, "weights"},
		{"negative max moving", BalanceSpec{MaxMoving: -1}, "max_moving"},
		{"imbalance by count", BalanceSpec{By: "keys", Imbalance: 1.5}, "imbalance"},
		{"weights by count", BalanceSpec{Weights: map[string]float64{"k": 2}}, "weights"},
	} {
		_, err := Balance(tc.spec)
		var inv *InvalidError
		if !errors.As(err, &inv) || inv.Field != tc.field {
			t.Errorf("%s: %v, want an invalid %s", tc.name, err, tc.field)
		}
	}
}
