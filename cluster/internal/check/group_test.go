package check

import (
	"errors"
	"strings"
	"testing"
	"time"
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
