package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenure-io/tenure/client/wire"
	"github.com/tenure-io/tenure/cluster/internal/check"
	"github.com/tenure-io/tenure/cluster/internal/lessor"
	"github.com/tenure-io/tenure/fsm"
)

// MaxRenewBatch bounds the leases of one RenewMany call.
const MaxRenewBatch = 1024

// AcquireRequest asks for a lease.
type AcquireRequest struct {
	Key      string
	Holder   string
	TTL      time.Duration
	Wait     time.Duration
	Metadata map[string]string
	// Secret is the lease secret the acquirer chose (check.Secret). A
	// grant keeps its hash; a lease held by Holder is kept only under the
	// same secret.
	Secret string
}

// LeaseView is a lease as a reader sees it: the replicated record plus, on
// the leader, the lessor's view of its deadline.
type LeaseView struct {
	*fsm.Lease
	// ExpiresIn and RenewedAt come from the leader's lessor; Tracked is
	// false when this node has no deadline for the lease (a follower, or a
	// free key).
	Tracked   bool
	ExpiresIn time.Duration
	RenewedAt time.Time
}

// Ready reports nil when this node is an established leader that serves
// writes, renewals and linearizable reads; ErrNotReady while it is leader
// but still establishing, or handing leadership over (Handover);
// ErrNotLeader otherwise.
func (n *Node) Ready() error {
	if n.leading.Load() != nil && !n.handingOver.Load() {
		return nil
	}
	if n.IsLeader() {
		return ErrNotReady
	}
	return ErrNotLeader
}

// Acquire proposes an acquisition and waits for its outcome (up to
// req.Wait in the key's FIFO queue if another holder has it). It returns
// the lease and whether it is a new grant; a *HeldError when the key stays
// held. ErrNotLeader and ErrNotReady mean nothing was proposed;
// ErrLeadershipLost and context errors mean the outcome is unknown.
func (n *Node) Acquire(ctx context.Context, req AcquireRequest) (LeaseView, bool, error) {
	if err := req.validate(n.cfg); err != nil {
		return LeaseView{}, false, err
	}
	p, err := n.proposer()
	if err != nil {
		return LeaseView{}, false, err
	}
	o := &op{cmd: fsm.Acquire{Key: req.Key, Holder: req.Holder, TTL: req.TTL, Metadata: req.Metadata, Time: time.Now().UnixNano(),
		SecretHash: fsm.HashSecret(req.Secret)}}
	if req.Wait > 0 {
		o.waitEnd = time.Now().Add(req.Wait)
	}
	r, err := p.submit(ctx, o)
	if err != nil {
		return LeaseView{}, false, err
	}
	switch r.Code {
	case fsm.Held:
		return LeaseView{}, false, &HeldError{Lease: r.Lease, WrongSecret: r.WrongSecret}
	case fsm.Disabled:
		return LeaseView{}, false, fmt.Errorf("key %q: %w", req.Key, ErrDisabled)
	case fsm.Prohibited:
		return LeaseView{}, false, fmt.Errorf("key %q, holder %q: %w", req.Key, req.Holder, ErrProhibited)
	}
	return n.view(r.Lease), r.Code == fsm.Granted, nil
}

// validate checks req against the bounds of cfg.
func (req AcquireRequest) validate(cfg Config) error {
	if err := fsm.ValidateKey(req.Key); err != nil {
		return &InvalidError{Field: "key", Err: err}
	}
	if err := check.Holder(req.Holder); err != nil {
		return err
	}
	if err := check.Secret(req.Secret); err != nil {
		return err
	}
	if req.TTL < cfg.MinTTL || req.TTL > cfg.MaxTTL {
		return invalid("ttl", "%v is outside [%v, %v]", req.TTL, cfg.MinTTL, cfg.MaxTTL)
	}
	if req.Wait < 0 || req.Wait > cfg.MaxWait {
		return invalid("wait", "%v is outside [0s, %v]", req.Wait, cfg.MaxWait)
	}
	return check.Metadata(req.Metadata)
}

// LeaseRef names one lease to renew: its key, token and secret.
type LeaseRef struct {
	Key    string
	Token  uint64
	Secret string
}

// secretHashes hashes the secrets of one renewal call: each run of equal
// secrets once, as a batch's leases usually share one (a Client's).
type secretHashes struct{ last, hash string }

// of returns fsm.HashSecret(secret).
func (h *secretHashes) of(secret string) string {
	if h.hash == "" || secret != h.last {
		h.last, h.hash = secret, fsm.HashSecret(secret)
	}
	return h.hash
}

// RenewResult is the outcome for one lease of RenewMany: Err is nil or a
// *LostError.
type RenewResult struct {
	Lease LeaseView
	Err   error
}

// Renew restarts the deadline of one lease. See RenewMany.
func (n *Node) Renew(ctx context.Context, key, holder, secret string, token uint64) (LeaseView, error) {
	out, err := n.RenewMany(ctx, holder, []LeaseRef{{Key: key, Token: token, Secret: secret}})
	if err != nil {
		return LeaseView{}, err
	}
	return out[0].Lease, out[0].Err
}

// RenewMany restarts the deadline of every lease that holder still holds
// under the given token and secret, then confirms leadership with one quorum round
// that starts after the call, and only then reports success. Nothing is
// written to the log: the leadership round (Confirmer.CheckLeadership) is
// a round of messages, shared by every renewal and read waiting for it. A lease whose deadline has passed cannot be
// renewed, even before its Expire is applied. The error is for the whole
// call (ErrNotLeader, ErrLeadershipLost …); per-lease losses (a
// *LostError) and wrong secrets (a *SecretError) are in the results.
func (n *Node) RenewMany(ctx context.Context, holder string, refs []LeaseRef) ([]RenewResult, error) {
	if err := check.Holder(holder); err != nil {
		return nil, err
	}
	if len(refs) == 0 || len(refs) > MaxRenewBatch {
		return nil, invalid("leases", "%d leases, want 1 to %d", len(refs), MaxRenewBatch)
	}
	for i, r := range refs {
		if err := fsm.ValidateKey(r.Key); err != nil {
			return nil, &InvalidError{Field: "key", Err: err}
		}
		if err := check.Token(r.Token); err != nil {
			return nil, err
		}
		if i > 0 && r.Secret == refs[i-1].Secret {
			continue // checked already
		}
		if err := check.Secret(r.Secret); err != nil {
			return nil, err
		}
	}
	out, err := renewals(ctx, n, holder, refs, &secretHashes{})
	if err != nil {
		return nil, err
	}
	for i := range out {
		switch {
		case out[i].Err == nil:
			n.metrics.Renewals.WithLabelValues("ok").Inc()
			out[i].Lease = n.view(out[i].Lease.Lease)
		case refused(out[i].Err):
			n.metrics.Renewals.WithLabelValues("lost").Inc()
		default: // not the primary any more: nothing was decided
			n.metrics.Renewals.WithLabelValues("not_leader").Inc()
		}
	}
	return out, nil
}

// refused reports whether err, a renewal's error, refuses that lease (a
// *LostError or a *SecretError) rather than the whole call. It is a
// function of its own so that its targets are allocated on refusals only,
// not for every lease of a bulk renewal.
func refused(err error) bool {
	var lost *LostError
	var wrong *SecretError
	return errors.As(err, &lost) || errors.As(err, &wrong)
}

// quorumRenewals answers the renewals of one RenewMany call, once its
// arguments are valid, on the established leader only: its lessor
// restarts the deadlines, then a quorum round that starts after that
// confirms it was still the leader when it did. RenewMany calls the
// policy of the build, renewals (unsafe_off.go).
func quorumRenewals(ctx context.Context, n *Node, holder string, refs []LeaseRef, hashes *secretHashes) ([]RenewResult, error) {
	if _, err := n.proposer(); err != nil {
		return nil, err
	}
	out := make([]RenewResult, len(refs))
	for i, r := range refs {
		out[i] = n.renewOne(r, hashes.of(r.Secret), holder)
	}
	if _, err := n.verify.Verify(ctx); err != nil {
		return nil, n.lostLeadership(err)
	}
	return out, nil
}

// renewOne renews r on this node's lessor if holder holds it under its
// token and the secret whose hash is secretHash in the FSM.
func (n *Node) renewOne(r LeaseRef, secretHash, holder string) RenewResult {
	cur, err := n.heldBy(r, secretHash, holder)
	if err != nil {
		return RenewResult{Err: err}
	}
	return n.renewTracked(cur)
}

// heldBy returns the FSM's record of r's key if holder holds it under
// r's token and the secret whose hash is secretHash, and otherwise a
// *LostError that says why not, or a *SecretError.
func (n *Node) heldBy(r LeaseRef, secretHash, holder string) (*fsm.Lease, error) {
	key, token := r.Key, r.Token
	cur := n.machine.Get(key)
	switch {
	case cur == nil:
		return nil, &LostError{Key: key, Reason: wire.ReasonUnknown}
	case cur.Holder != holder || cur.Token != token:
		if token < cur.Token {
			return nil, &LostError{Key: key, Reason: wire.ReasonSuperseded}
		}
		// The caller's holder and token never were this key's lease.
		return nil, &LostError{Key: key, Reason: wire.ReasonNotHolder}
	case !cur.Held:
		return nil, &LostError{Key: key, Reason: cur.Reason.String()}
	case cur.Ending != fsm.ReasonNone:
		return nil, &LostError{Key: key, Reason: cur.Ending.String()}
	case !fsm.SecretMatches(cur.SecretHash, secretHash):
		return nil, &SecretError{Key: key}
	}
	return cur, nil
}

// renewTracked restarts the deadline of cur, a lease held in the FSM, on
// this node's lessor: ErrNotLeader if the lessor is not the primary.
func (n *Node) renewTracked(cur *fsm.Lease) RenewResult {
	outcome, reason := n.lessor.Renew(cur.Key, cur.Token)
	switch outcome {
	case lessor.Renewed:
		return RenewResult{Lease: LeaseView{Lease: cur}}
	case lessor.RenewEnding:
		return RenewResult{Err: &LostError{Key: cur.Key, Reason: reason}}
	case lessor.RenewExpired:
		return RenewResult{Err: &LostError{Key: cur.Key, Reason: wire.ReasonExpired}}
	case lessor.RenewNotPrimary:
		return RenewResult{Err: ErrNotLeader}
	}
	// Held in the FSM but not tracked: it was just freed or re-granted.
	return RenewResult{Err: &LostError{Key: cur.Key, Reason: wire.ReasonSuperseded}}
}

// Consistency selects how a read is served.
type Consistency int

const (
	// Linearizable reads are served by the established leader after a
	// leadership check that starts after the read arrived.
	Linearizable Consistency = iota
	// Stale reads serve the local state machine as it is.
	Stale
)

// Get reads one lease. ErrNotFound if the key was never seen.
func (n *Node) Get(ctx context.Context, key string, c Consistency) (LeaseView, error) {
	if err := fsm.ValidateKey(key); err != nil {
		return LeaseView{}, &InvalidError{Field: "key", Err: err}
	}
	if err := n.readBarrier(ctx, c); err != nil {
		return LeaseView{}, err
	}
	l := n.machine.Get(key)
	if l == nil {
		return LeaseView{}, fmt.Errorf("key %q: %w", key, ErrNotFound)
	}
	return n.view(l), nil
}

// Verify confirms, with a quorum round that starts after the call, that
// this node is still the established leader.
func (n *Node) Verify(ctx context.Context) error {
	return n.readBarrier(ctx, Linearizable)
}

func (n *Node) readBarrier(ctx context.Context, c Consistency) error {
	if c == Stale {
		return nil
	}
	if _, err := n.proposer(); err != nil {
		return err
	}
	commit, err := n.verify.Verify(ctx)
	if err != nil {
		return n.lostLeadership(err)
	}
	return n.waitApplied(ctx, commit)
}

func (n *Node) lostLeadership(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrLeadershipLost, err)
}

func (n *Node) proposer() (*proposer, error) {
	if p := n.leading.Load(); p != nil && !n.handingOver.Load() {
		return p, nil
	}
	return nil, n.Ready()
}

// view adds the lessor's deadline to a lease record.
func (n *Node) view(l *fsm.Lease) LeaseView {
	v := LeaseView{Lease: l}
	if l.Held {
		v.ExpiresIn, v.RenewedAt, v.Tracked = n.lessor.Deadline(l.Key, l.Token)
	}
	return v
}

// Changed returns a channel closed at the next change of any lease; blocking
// queries wait on it.
func (n *Node) Changed() <-chan struct{} { return n.machine.Changed() }

// LeaseIndex is the highest Raft index that changed a lease.
func (n *Node) LeaseIndex() uint64 {
	_, _, idx := n.machine.Indexes()
	return idx
}

// Waiting is the number of blocking acquirers queued on this leader.
func (n *Node) Waiting() int {
	if p := n.leading.Load(); p != nil {
		return int(p.waiting.Load())
	}
	return 0
}

// GroupIndex is the highest Raft index that changed a group, a key control
// or a drain mark.
func (n *Node) GroupIndex() uint64 { return n.machine.GroupIndex() }
