package httpapi

import (
	"context"
	"time"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
)

// Node is what the API needs of the server node it serves: *cluster.Node is
// the implementation, and tests use a small fake where a whole cluster is
// not the point. The methods' contracts are cluster.Node's.
type Node interface {
	// Leases.
	Acquire(ctx context.Context, req cluster.AcquireRequest) (cluster.LeaseView, bool, error)
	Release(ctx context.Context, key, holder, secret string, token uint64) (bool, error)
	Revoke(ctx context.Context, key string, force bool) ([]cluster.EndedLease, error)
	RevokeHolder(ctx context.Context, holder string, force bool) ([]cluster.EndedLease, error)
	Renew(ctx context.Context, key, holder, secret string, token uint64) (cluster.LeaseView, error)
	RenewMany(ctx context.Context, holder string, refs []cluster.LeaseRef) ([]cluster.RenewResult, error)
	Get(ctx context.Context, key string, c cluster.Consistency) (cluster.LeaseView, error)
	ListPage(ctx context.Context, f fsm.Filter, p fsm.Page, c cluster.Consistency) (cluster.LeasePage, error)

	// Groups, controls and workers.
	PutGroup(ctx context.Context, spec cluster.GroupSpec) (*fsm.Group, error)
	DeleteGroup(ctx context.Context, name string) error
	GroupKeys(ctx context.Context, name string, add, remove []string) (*fsm.Group, error)
	SetMaxPerWorker(ctx context.Context, name string, max int) (*fsm.Group, error)
	Groups(ctx context.Context, c cluster.Consistency) ([]*fsm.Group, uint64, error)
	GroupsPage(ctx context.Context, after string, limit int, c cluster.Consistency) ([]*fsm.Group, string, uint64, error)
	GroupPage(ctx context.Context, name string, p fsm.Page, c cluster.Consistency, visible func(key string) bool) (cluster.GroupView, error)
	AssignmentPage(ctx context.Context, name, worker string, p fsm.Page, c cluster.Consistency, visible func(key string) bool) (cluster.AssignmentView, error)
	KeyControl(ctx context.Context, key string, c cluster.Consistency) (fsm.KeyControl, error)
	SetKeyControl(ctx context.Context, key string, ctl fsm.KeyControl, force bool) ([]cluster.EndedLease, error)
	EditKeyControl(ctx context.Context, key string, edit cluster.ControlEdit) (fsm.KeyControl, []cluster.EndedLease, error)
	DrainWorker(ctx context.Context, worker string, draining, force bool) ([]string, error)
	Workers(ctx context.Context, c cluster.Consistency, id, after string, limit int) ([]cluster.WorkerView, string, uint64, error)
	PlacementHealth(ctx context.Context, threshold time.Duration) (cluster.PlacementReport, error)

	// ACLs: tokens are resolved against this node's replicated state.
	ResolveToken(secret string) (*cluster.Authorizer, error)
	// ACL makes the token and policy calls (cluster.ACL).
	ACL() cluster.ACL
	RegisterWorker(ctx context.Context, a *cluster.Authorizer, worker string, groups []string) error

	// Blocking queries: Changed is closed by the next applied change; the
	// indexes are those of the last change of the leases and of the
	// placement state.
	Changed() <-chan struct{}
	LeaseIndex() uint64
	GroupIndex() uint64

	// Events: this node's event history (cluster.Node.Events), and the
	// index after which it holds every event.
	Events(after uint64, f fsm.EventFilter, limit int) ([]fsm.Event, uint64, error)
	EventBase() uint64

	// Leadership, forwarding and freshness.
	Ready() error
	Verify(ctx context.Context) error
	IsLeader() bool
	ID() string
	LeaderHTTPAddr() string
	// LeaderHTTP is the leader's id and the HTTP address it gave itself
	// (never one that gossip announced), waiting until ctx ends for an
	// answer not yet in.
	LeaderHTTP(ctx context.Context) (id, addr string)
	LastContact() time.Duration
	Health() cluster.NodeHealth

	// Cluster and operator. StatusChanged is closed when what Status
	// reports (but its indexes and times) may have changed, and
	// MembersChanged when Members may have.
	Status() cluster.Status
	Members() []cluster.Member
	StatusChanged() <-chan struct{}
	MembersChanged() <-chan struct{}
	RemoveServer(ctx context.Context, id string, force bool) (cluster.RemoveResult, error)
	ReadmitServer(ctx context.Context, id string) (cluster.Server, error)
	PromoteServer(ctx context.Context, id string) (int, error)
	TransferLeadership(ctx context.Context, id string) (string, error)
	Snapshot(ctx context.Context) (cluster.SnapshotInfo, error)
	Backup(ctx context.Context) ([]byte, error)
	RestoreSnapshot(ctx context.Context, b []byte, opts cluster.RestoreOptions) (cluster.RestoreResult, error)
	Keyring() ([]cluster.KeyringView, int, error)
	ChangeKeyring(op cluster.KeyringMessage) error
	SendKeyringToWorkers(ctx context.Context, op cluster.KeyringMessage) ([]string, error)
}

var _ Node = (*cluster.Node)(nil)
