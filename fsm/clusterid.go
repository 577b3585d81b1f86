package fsm

// ClusterID names the cluster once: the first one applied sets the
// cluster id for good, every later one changes nothing (Refused when it
// names another id, Done when it repeats the same). The leader proposes it
// when it finds the state machine without an id, so every server learns
// the same id from the log or a snapshot and can check that its data dir
// belongs to the cluster it has joined.
type ClusterID struct {
	ID string
}

func (ClusterID) Type() Type { return TypeClusterID }

func (c ClusterID) encode(e *encoder) { e.string(c.ID) }

// setOnce applies a command that sets a value for good (ClusterID,
// BackupKey): Refused when the command's value is not valid, or another
// value is set already; Done, after calling set, when none is set; Done
// when the command repeats the value that is set.
func setOnce(valid, unset, same bool, set func()) Result {
	if !valid || (!unset && !same) {
		return Result{Code: Refused}
	}
	if unset {
		set()
	}
	return Result{Code: Done}
}

// ClusterID returns the id of the cluster this state belongs to, or "" as
// long as no ClusterID command has been applied.
func (m *Machine) ClusterID() string { return rlocked(m, func() string { return m.clusterID }) }

// IsClusterID reports whether an encoded log entry is a ClusterID command
// and returns its id. It reads only that type: any other entry, or one
// that does not decode, is (false, ""). A server uses it to find the
// cluster id in its log at start, before the log is replayed.
func IsClusterID(data []byte) (string, bool) {
	if len(data) < 2 || Type(data[0]) != TypeClusterID {
		return "", false
	}
	c, err := Decode(data)
	if err != nil {
		return "", false
	}
	id, ok := c.(ClusterID)
	return id.ID, ok
}
