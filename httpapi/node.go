package httpapi

import (
	"context"
	"time"

	"github.com/tenure-io/tenure/cluster"
	"github.com/tenure-io/tenure/fsm"
)

// Node is what the API needs of the server node it serves, one interface
// per concern, each named for the handlers that call it. NodeOf fills
// every one from a *cluster.Node; a test fills only those its requests
// reach (Replica, which every request reaches, is required). The methods'
// contracts are cluster.Node's.
type Node struct {
	Replica   Replica
	Leases    Leases
	Groups    Groups
	Placement Placement
	ACLs      ACLs
	Members   Members
	Operator  Operator
	Events    Events
}

// NodeOf is the Node of a cluster node: n serves every concern, its
// ACL calls (cluster.Node.ACL) serve ACLs.
func NodeOf(n *cluster.Node) Node {
	return Node{Replica: n, Leases: n, Groups: n, Placement: n, ACLs: n.ACL(), Members: n, Operator: n, Events: n}
}

// Replica is what every request needs of this node: whether it leads,
// which node does, and how fresh its state is (routing, forwarding, the
// read headers), and the resolution of the request's ACL token against
// its replicated state (guard); and its status (the status and readiness
// routes). Changed is closed by the next applied change (blocking queries
// wait on it); StatusChanged when what Status reports (but its indexes
// and times) may have changed.
type Replica interface {
	Ready() error
	IsLeader() bool
	ID() string
	LeaderHTTPAddr() string
	// LeaderHTTP is the leader's id and the HTTP address it gave itself
	// (never one that gossip announced), waiting until ctx ends for an
	// answer not yet in.
	LeaderHTTP(ctx context.Context) (id, addr string)
	LastContact() time.Duration
	Health() cluster.NodeHealth
	Changed() <-chan struct{}
	ResolveToken(secret string) (*cluster.Authorizer, error)
	Status() cluster.Status
	StatusChanged() <-chan struct{}
	Verify(ctx context.Context) error
}

// Leases is what the lease routes need (leases.go): the writes, a lease,
// a page of leases, and the index of the last change of any lease.
type Leases interface {
	Acquire(ctx context.Context, req cluster.AcquireRequest) (cluster.LeaseView, bool, error)
	Release(ctx context.Context, key, holder, secret string, token uint64) (bool, error)
	Revoke(ctx context.Context, key string, force bool) ([]cluster.EndedLease, error)
	RevokeHolder(ctx context.Context, holder string, force bool) ([]cluster.EndedLease, error)
	Renew(ctx context.Context, key, holder, secret string, token uint64) (cluster.LeaseView, error)
	RenewMany(ctx context.Context, holder string, refs []cluster.LeaseRef) ([]cluster.RenewResult, error)
	Get(ctx context.Context, key string, c cluster.Consistency) (cluster.LeaseView, error)
	ListPage(ctx context.Context, f fsm.Filter, p fsm.Page, c cluster.Consistency) (cluster.LeasePage, error)
	LeaseIndex() uint64
}

// Groups is what the group and placement routes need (groups.go,
// health.go). GroupIndex is the index of the last change of the placement
// state.
type Groups interface {
	PutGroup(ctx context.Context, spec cluster.GroupSpec) (*fsm.Group, error)
	DeleteGroup(ctx context.Context, name string) error
	GroupKeys(ctx context.Context, name string, add, remove []string) (*fsm.Group, error)
	SetGroupKeys(ctx context.Context, name string, keys []string) (*fsm.Group, error)
	SetMaxPerWorker(ctx context.Context, name string, max int) (*fsm.Group, error)
	SetGroupBalance(ctx context.Context, name string, spec cluster.BalanceSpec) (*fsm.Group, error)
	GroupsPage(ctx context.Context, after string, limit int, c cluster.Consistency) ([]*fsm.Group, string, uint64, error)
	GroupPage(ctx context.Context, name string, p fsm.Page, c cluster.Consistency, visible func(key string) bool) (cluster.GroupView, error)
	AssignmentPage(ctx context.Context, name, worker string, p fsm.Page, c cluster.Consistency, visible func(key string) bool) (cluster.AssignmentView, error)
	PlacementHealth(ctx context.Context, threshold time.Duration) (cluster.PlacementReport, error)
	GroupIndex() uint64
	LeaseIndex() uint64
}

// Placement is what the key control and worker routes need (groups.go,
// acl.go). GroupIndex is the index of the last change of the placement
// state.
type Placement interface {
	KeyControl(ctx context.Context, key string, c cluster.Consistency) (fsm.KeyControl, error)
	SetKeyControl(ctx context.Context, key string, ctl fsm.KeyControl, force bool) ([]cluster.EndedLease, error)
	EditKeyControl(ctx context.Context, key string, edit cluster.ControlEdit) (fsm.KeyControl, []cluster.EndedLease, error)
	GroupIndex() uint64
	Workers(ctx context.Context, c cluster.Consistency, id, after string, limit int) ([]cluster.WorkerView, string, uint64, error)
	DrainWorker(ctx context.Context, worker string, draining, force bool) ([]string, error)
	RegisterWorker(ctx context.Context, a *cluster.Authorizer, worker string, groups []string) error
	Prepared(ctx context.Context, a *cluster.Authorizer, group, worker string, keys []string) ([]string, error)
	ReportLoads(holder string, keys []cluster.KeyLoad, total *float64)
}

// ACLs is what the token and policy routes need (acl.go): cluster.ACL.
type ACLs interface {
	Bootstrap(ctx context.Context) (cluster.NewToken, error)
	CreateToken(ctx context.Context, spec cluster.TokenSpec) (cluster.NewToken, error)
	DeleteToken(ctx context.Context, accessor string) error
	TokensPage(ctx context.Context, after string, limit int, c cluster.Consistency) ([]*fsm.ACLToken, string, uint64, error)
	Token(ctx context.Context, accessor string, c cluster.Consistency) (*fsm.ACLToken, error)
	SetPolicy(ctx context.Context, spec cluster.PolicySpec) (*fsm.ACLPolicy, error)
	DeletePolicy(ctx context.Context, name string) error
	Policies(ctx context.Context, c cluster.Consistency) ([]*fsm.ACLPolicy, uint64, error)
	Policy(ctx context.Context, name string, c cluster.Consistency) (*fsm.ACLPolicy, error)
}

// Members is what the members route needs. MembersChanged is closed when
// Members may have changed.
type Members interface {
	Members() []cluster.Member
	MembersChanged() <-chan struct{}
}

// Operator is what the operator routes need: Raft membership, leadership
// transfer, the gossip keyring, snapshots and backups (backup.go).
type Operator interface {
	RemoveServer(ctx context.Context, id string, force bool) (cluster.RemoveResult, error)
	ReadmitServer(ctx context.Context, id string) (cluster.Server, error)
	PromoteServer(ctx context.Context, id string) (int, error)
	TransferLeadership(ctx context.Context, id string) (string, error)
	Keyring() ([]cluster.KeyringView, int, error)
	ChangeKeyring(op cluster.KeyringMessage) error
	SendKeyringToWorkers(ctx context.Context, op cluster.KeyringMessage) ([]string, error)
	Snapshot(ctx context.Context) (cluster.SnapshotInfo, error)
	Backup(ctx context.Context) ([]byte, error)
	RestoreSnapshot(ctx context.Context, b []byte, opts cluster.RestoreOptions) (cluster.RestoreResult, error)
}

// Events is what the events route needs: this node's event history
// (cluster.Node.Events), and the index after which it holds every event.
type Events interface {
	Events(after uint64, f fsm.EventFilter, limit int) ([]fsm.Event, uint64, error)
	EventBase() uint64
}
