package acl_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/tenure-io/tenure/cluster/internal/acl"
	"github.com/tenure-io/tenure/cluster/internal/check"
	"github.com/tenure-io/tenure/fsm"
)

// node is a node whose writes all get one result and whose read barrier
// records the consistency it was asked for.
type node struct {
	on      bool
	result  fsm.Result
	writes  []fsm.Command
	barrier []string
}

// calls are the ACL calls of n.
func (n *node) calls() acl.Calls[string] {
	return acl.NewCalls(acl.Node[string]{
		On:    n.on,
		State: fsm.New(),
		Write: func(_ context.Context, cmd fsm.Command) (fsm.Result, error) {
			n.writes = append(n.writes, cmd)
			return n.result, nil
		},
		ReadBarrier: func(_ context.Context, c string) error {
			n.barrier = append(n.barrier, c)
			return nil
		},
		Log: hclog.NewNullLogger(),
	})
}

func TestCallsNeedACLs(t *testing.T) {
	calls := (&node{}).calls()
	if _, err := calls.Bootstrap(context.Background()); !errors.Is(err, acl.ErrDisabled) {
		t.Errorf("Bootstrap = %v, want ErrDisabled", err)
	}
	if _, _, err := calls.Policies(context.Background(), "stale"); !errors.Is(err, acl.ErrDisabled) {
		t.Errorf("Policies = %v, want ErrDisabled", err)
	}
}

func TestCallsMapResults(t *testing.T) {
	n := &node{on: true, result: fsm.Result{Code: fsm.NotFound}}
	calls := n.calls()
	ctx := context.Background()
	if err := calls.DeleteToken(ctx, "a1"); !errors.Is(err, check.ErrNotFound) {
		t.Errorf("DeleteToken = %v, want ErrNotFound", err)
	}
	if err := calls.DeletePolicy(ctx, "p"); !errors.Is(err, check.ErrNotFound) {
		t.Errorf("DeletePolicy = %v, want ErrNotFound", err)
	}
	if _, err := calls.Policy(ctx, "p", "linearizable"); !errors.Is(err, check.ErrNotFound) {
		t.Errorf("Policy = %v, want ErrNotFound", err)
	}
	if len(n.barrier) != 1 || n.barrier[0] != "linearizable" {
		t.Errorf("read barriers %q, want one linearizable", n.barrier)
	}
	n.result = fsm.Result{Code: fsm.Refused}
	if _, err := calls.Bootstrap(ctx); !errors.Is(err, acl.ErrBootstrapped) {
		t.Errorf("Bootstrap = %v, want ErrBootstrapped", err)
	}
	if _, err := calls.CreateToken(ctx, acl.TokenSpec{}); !errors.Is(err, check.ErrInvalid) {
		t.Errorf("CreateToken without policies = %v, want ErrInvalid", err)
	}
	if _, err := calls.SetPolicy(ctx, acl.PolicySpec{}); !errors.Is(err, check.ErrInvalid) {
		t.Errorf("SetPolicy without a name = %v, want ErrInvalid", err)
	}
}
