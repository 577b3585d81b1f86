package cluster

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/fsm"
)

// The write path. Every command this node writes goes through
// applyCommand, and from there through raftApply, the one call of
// raft.Apply: the proposer's batches (proposer.apply), LeaderEstablished
// and Handover, the cluster id and the backup key. Raft commits the entry
// and applies it on every server through the raft.FSM adapter of
// raftfsm.go (checkedFSM), whose answer applyCommand returns. A restore
// does not write a command: it installs a snapshot (RestoreSnapshot), and
// holds raftApply back meanwhile.

// applyCommand proposes cmd through Raft and waits for the state machine's
// answer. Commands of the leader are never forwarded to another node.
func (n *Node) applyCommand(cmd fsm.Command) (any, error) {
	f, err := n.raftApply(fsm.Encode(cmd))
	if err != nil {
		return nil, err
	}
	if err := n.futureError(f); err != nil {
		return nil, commitError(err)
	}
	if err, ok := f.Response().(error); ok {
		return nil, fmt.Errorf("%w: %w", ErrShutdown, err) // the state machine stopped
	}
	return f.Response(), nil
}

// commitError is the error of a Raft future that waited for an entry this
// leader proposed to commit (a command, or a change of the configuration)
// as the cluster's sentinels say it: ErrShutdown; ErrNotReady when Raft
// refused the entry before appending it because a leadership transfer is
// under way (nothing happened); otherwise ErrLeadershipLost, wrapping
// Raft's error: the entry may or may not commit.
func commitError(err error) error {
	switch {
	case errors.Is(err, raft.ErrRaftShutdown):
		return ErrShutdown
	case errors.Is(err, raft.ErrLeadershipTransferInProgress):
		return fmt.Errorf("%w: %w", ErrNotReady, err)
	}
	return fmt.Errorf("%w: %w", ErrLeadershipLost, err)
}

// raftApply hands data, an encoded command, to Raft: the one call of
// raft.Apply in tenure. It refuses (errRestoring) while a restore holds
// writes back (restoreGate), so that no entry reaches the log between the
// moment RestoreSnapshot reads the token counter and the moment the
// restored state replaces the old one. The future it returns is Raft's.
func (n *Node) raftApply(data []byte) (raft.ApplyFuture, error) {
	if n.restore.on.Load() {
		return nil, errRestoring
	}
	n.restore.mu.RLock()
	defer n.restore.mu.RUnlock()
	if n.restore.on.Load() {
		return nil, errRestoring
	}
	return n.raft.Apply(data, 0), nil
}

// futureError waits for f as f.Error() does, but returns
// raft.ErrRaftShutdown once the node shuts down: hashicorp/raft never
// answers a future it took into its queue just before it shut down, and a
// leader goroutine waiting on one would hold Shutdown forever. An answer
// already there wins over the shutdown. The goroutine that waits on f
// stays until Raft answers, if it ever does.
func (n *Node) futureError(f interface{ Error() error }) error {
	answer := make(chan error, 1)
	go func() { answer <- f.Error() }()
	select {
	case err := <-answer:
		return err
	case <-n.shutdownCh:
		select {
		case err := <-answer:
			return err
		case <-time.After(10 * time.Millisecond):
			return raft.ErrRaftShutdown
		}
	}
}
