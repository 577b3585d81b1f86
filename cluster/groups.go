package cluster

import (
	"context"
	"fmt"

	"github.com/tenure-io/tenure/cluster/internal/check"
	"github.com/tenure-io/tenure/cluster/internal/placement"
	"github.com/tenure-io/tenure/cluster/internal/views"
	"github.com/tenure-io/tenure/fsm"
)

// GroupSpec defines a group: explicit keys, or Count keys named Prefix0 …
// Prefix(Count-1) (check.GroupSpec).
type GroupSpec = check.GroupSpec

// PutGroup creates a group or replaces its keys and settings, checking
// spec.CAS atomically unless spec.Replace: a failed check is a *CASError
// with the current group. The plan of keys that stay is kept; the
// balancer places the rest.
func (n *Node) PutGroup(ctx context.Context, spec GroupSpec) (*fsm.Group, error) {
	put, err := check.Group(spec, placement.MinStuckGrace, placement.MaxStuckGrace)
	if err != nil {
		return nil, err
	}
	var cmd fsm.Command = fsm.GroupPutCAS{Define: put, Index: spec.CAS}
	if spec.Replace {
		cmd = put
	}
	r, err := n.write(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if r.Code == fsm.CASFailed {
		return nil, &CASError{Name: spec.Name, Index: spec.CAS, Group: n.machine.Group(spec.Name)}
	}
	return n.machine.Group(spec.Name), nil
}

// SetMaxPerWorker changes the per-worker maximum of a group.
func (n *Node) SetMaxPerWorker(ctx context.Context, name string, max int) (*fsm.Group, error) {
	if err := check.Name("name", name); err != nil {
		return nil, err
	}
	if max < 0 {
		return nil, invalid("max_per_worker", "%d is negative", max)
	}
	return n.writeGroup(ctx, name, fsm.GroupMax{Name: name, MaxPerWorker: max})
}

// BalanceSpec is a group's balance as an operator sets it
// (check.BalanceSpec).
type BalanceSpec = check.BalanceSpec

// SetGroupBalance sets how the balancer places the keys of a group: by
// count, or by load with the given imbalance, move budget and weights
// (check.Balance fills in the defaults). It replaces the balance the group
// had, weights included.
func (n *Node) SetGroupBalance(ctx context.Context, name string, spec BalanceSpec) (*fsm.Group, error) {
	if err := check.Name("name", name); err != nil {
		return nil, err
	}
	b, err := check.Balance(spec)
	if err != nil {
		return nil, err
	}
	return n.writeGroup(ctx, name, fsm.GroupBalance{Name: name, Balance: b})
}

// DeleteGroup removes a group; its leases are left as they are.
func (n *Node) DeleteGroup(ctx context.Context, name string) error {
	if err := check.Name("name", name); err != nil {
		return err
	}
	_, err := n.writeGroup(ctx, name, fsm.GroupDelete{Name: name})
	return err
}

// GroupKeys adds and removes keys of a group.
func (n *Node) GroupKeys(ctx context.Context, name string, add, remove []string) (*fsm.Group, error) {
	if err := check.Name("name", name); err != nil {
		return nil, err
	}
	for _, k := range append(append([]string(nil), add...), remove...) {
		if err := fsm.ValidateKey(k); err != nil {
			return nil, &InvalidError{Field: "keys", Err: err}
		}
	}
	if g := n.machine.Group(name); g != nil && len(g.Keys)+len(add) > check.MaxGroupKeys {
		return nil, invalid("add", "the group would exceed %d keys", check.MaxGroupKeys)
	}
	return n.writeGroup(ctx, name, fsm.GroupKeys{Name: name, Add: add, Remove: remove})
}

// SetGroupKeys sets the keys of a group to keys, adding and removing in one
// log entry; the keys that stay keep their targets. Setting the keys the
// group has already changes nothing, so a caller that syncs a group with
// its own store may repeat it at will.
func (n *Node) SetGroupKeys(ctx context.Context, name string, keys []string) (*fsm.Group, error) {
	if err := check.Name("name", name); err != nil {
		return nil, err
	}
	if len(keys) > check.MaxGroupKeys {
		return nil, invalid("keys", "%d keys, the limit is %d", len(keys), check.MaxGroupKeys)
	}
	for _, k := range keys {
		if err := fsm.ValidateKey(k); err != nil {
			return nil, &InvalidError{Field: "keys", Err: err}
		}
	}
	return n.writeGroup(ctx, name, fsm.GroupSetKeys{Name: name, Keys: keys})
}

// writeGroup proposes cmd, a change of group name, and returns the group
// once it applied; ErrNotFound when there is no such group.
func (n *Node) writeGroup(ctx context.Context, name string, cmd fsm.Command) (*fsm.Group, error) {
	r, err := n.write(ctx, cmd)
	if err != nil {
		return nil, err
	}
	if r.Code == fsm.NotFound {
		return nil, fmt.Errorf("group %q: %w", name, ErrNotFound)
	}
	return n.machine.Group(name), nil
}

// SetKeyControl replaces an operator's controls of key: disabled (nobody
// may acquire it) and prohibited holders. When the new controls refuse the
// key's current holder, its lease ends as Revoke ends it (reason disabled
// or prohibited): safely by default, at once with force. It answers the
// lease it ended, if any. Disabling or prohibiting a key that nothing
// knows (views.KnownKey: no lease record, no group, no controls) is
// refused with ErrNotFound unless force; clearing controls never is.
func (n *Node) SetKeyControl(ctx context.Context, key string, ctl fsm.KeyControl, force bool) ([]EndedLease, error) {
	if err := fsm.ValidateKey(key); err != nil {
		return nil, &InvalidError{Field: "key", Err: err}
	}
	if err := check.Prohibited("prohibited", ctl.Prohibited); err != nil {
		return nil, err
	}
	if !force && (ctl.Disabled || len(ctl.Prohibited) > 0) && !views.KnownKey(n.machine, key) {
		return nil, unknownKey(key)
	}
	r, err := n.end(ctx, fsm.SetKeyControl{Key: key, Control: ctl, Force: force})
	return r.ended, err
}

// ControlEdit changes the controls of a key on top of what they are when
// the change applies: Disabled, if set, sets it; the holders of Prohibit
// are added to the prohibited ones, then those of Allow removed. Force
// accepts a disable or prohibit of a key that nothing knows
// (views.KnownKey), and frees at once a lease the new controls refuse
// (see SetKeyControl).
type ControlEdit struct {
	Disabled *bool
	Prohibit []string
	Allow    []string
	Force    bool
}

// EditKeyControl applies edit to the controls of key atomically (no
// read-modify-write: two operators' edits both take effect) and returns
// the controls after it, and the lease it ended, if any: when the new
// controls refuse the key's holder, its lease ends as SetKeyControl ends
// it (safely, or at once with edit.Force). An edit that would prohibit
// more than fsm.MaxProhibited holders fails with an *InvalidError.
func (n *Node) EditKeyControl(ctx context.Context, key string, edit ControlEdit) (fsm.KeyControl, []EndedLease, error) {
	if err := fsm.ValidateKey(key); err != nil {
		return fsm.KeyControl{}, nil, &InvalidError{Field: "key", Err: err}
	}
	if err := check.Prohibited("prohibit", edit.Prohibit); err != nil {
		return fsm.KeyControl{}, nil, err
	}
	if err := check.Prohibited("allow", edit.Allow); err != nil {
		return fsm.KeyControl{}, nil, err
	}
	if edit.Disabled == nil && len(edit.Prohibit) == 0 && len(edit.Allow) == 0 {
		return fsm.KeyControl{}, nil, invalid("edit", "changes nothing: give disabled, prohibit or allow")
	}
	restricts := (edit.Disabled != nil && *edit.Disabled) || len(edit.Prohibit) > 0
	if restricts && !edit.Force && !views.KnownKey(n.machine, key) {
		return fsm.KeyControl{}, nil, unknownKey(key)
	}
	cmd := fsm.EditKeyControl{Key: key, Prohibit: edit.Prohibit, Allow: edit.Allow, Force: edit.Force}
	if edit.Disabled != nil {
		cmd.SetDisabled, cmd.Disabled = true, *edit.Disabled
	}
	r, err := n.end(ctx, cmd)
	if err != nil {
		return fsm.KeyControl{}, nil, err
	}
	if r.res.Code == fsm.Refused {
		return fsm.KeyControl{}, nil, invalid("prohibit", "key %q would have more than %d prohibited holders", key, fsm.MaxProhibited)
	}
	// The controls once the edit has applied (a later change may show too).
	return n.machine.Control(key), r.ended, nil
}

// DrainWorker marks a worker as drained (or not): the balancer moves its
// keys to other workers, which it hands back as its targets go. Draining
// a worker that nothing knows (views.KnownWorker) is refused with
// ErrNotFound unless force: an operator may drain a worker before it
// starts; undoing a drain is never refused. The warnings name each group
// of the worker that a drain leaves without a live worker to own its
// keys; the drain happens anyway.
func (n *Node) DrainWorker(ctx context.Context, worker string, draining, force bool) ([]string, error) {
	if err := check.Holder(worker); err != nil {
		return nil, &InvalidError{Field: "worker", Err: err}
	}
	if err := check.Name("worker", worker); err != nil && draining {
		// Undrain stays open to a mark written before the rule.
		return nil, err
	}
	if draining && !force && !views.KnownWorker(n.machine, n.workerMembers(), worker) {
		return nil, fmt.Errorf("worker %q is unknown (no gossip member, registration, drain mark, target or lease names it; force=true drains it anyway): %w", worker, ErrNotFound)
	}
	var warnings []string
	if draining {
		warnings = views.DrainWarnings(n.machine, liveWorkers(n.workerMembers()), worker, n.admission())
	}
	if _, err := n.write(ctx, fsm.WorkerDrain{Worker: worker, Draining: draining}); err != nil {
		return nil, err
	}
	return warnings, nil
}

// write proposes one command through the leader's proposer.
func (n *Node) write(ctx context.Context, cmd fsm.Command) (fsm.Result, error) {
	p, err := n.proposer()
	if err != nil {
		return fsm.Result{}, err
	}
	return p.submit(ctx, &op{cmd: cmd})
}

// ValidateName checks a group name or a worker id given elsewhere than in
// a command (the HTTP API's authorize checks): the *InvalidError it returns
// names field.
func ValidateName(field, name string) error { return check.Name(field, name) }

// GroupView is a group with its keys' targets, owners and controls.
type GroupView = views.GroupView

// KeyControl reads the controls of a key.
func (n *Node) KeyControl(ctx context.Context, key string, c Consistency) (fsm.KeyControl, error) {
	if err := fsm.ValidateKey(key); err != nil {
		return fsm.KeyControl{}, &InvalidError{Field: "key", Err: err}
	}
	if err := n.readBarrier(ctx, c); err != nil {
		return fsm.KeyControl{}, err
	}
	return n.machine.Control(key), nil
}
