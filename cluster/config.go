package cluster

import (
	"github.com/tenure-io/tenure/cluster/internal/clock"
	"github.com/tenure-io/tenure/cluster/internal/nodeconfig"
)

// ErrACLsNeedAuthenticatedRaft is wrapped by Validate for a configuration
// with ACLs on whose Raft would listen on plain TCP.
var ErrACLsNeedAuthenticatedRaft = nodeconfig.ErrACLsNeedAuthenticatedRaft

// Peer names a server of a statically bootstrapped cluster.
type Peer = nodeconfig.Peer

// Config configures a Node (nodeconfig.Config: its fields, defaults and
// checks). Build it from DefaultConfig; New validates it.
type Config = nodeconfig.Config

// ConnLimits bound what remote hosts can hold open on a server's Raft and
// gossip ports (nodeconfig.ConnLimits).
type ConnLimits = nodeconfig.ConnLimits

// DefaultConfig returns a Config with every default set; the caller fills in
// NodeID, DataDir and addresses.
func DefaultConfig() Config { return nodeconfig.DefaultConfig() }

// Clock is the time source of the lessor, the proposer's timers and the
// stuck tracker (Config.Clock). Deadlines compare readings of Now with
// time.Time.Sub, so the real clock's monotonic reading is what counts.
type Clock = clock.Clock

// Timer is the part of *time.Timer that a Clock's timers offer.
type Timer = clock.Timer

// SystemClock is the real monotonic clock.
type SystemClock = clock.System
