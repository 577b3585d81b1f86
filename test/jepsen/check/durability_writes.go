package check

import (
	"fmt"

	"github.com/tenure-io/tenure/fsm"
)

// describe names w for a violation.
func (w Write) describe() string {
	if w.Op == WriteGroup {
		return fmt.Sprintf("group creation group=%s", w.Key)
	}
	return fmt.Sprintf("%s key=%s holder=%s token=%d", w.Op, w.Key, w.Holder, w.Token)
}

// collectCommands records the releases, revokes and group writes of one
// log entry's commands (a Batch's, and those an ACL identity wraps).
func (n *durNode) collectCommands(index uint64, data []byte) error {
	c, err := fsm.Decode(data)
	if err != nil {
		return fmt.Errorf("log entry %d: %w", index, err)
	}
	var walk func(fsm.Command)
	walk = func(c fsm.Command) {
		switch c := c.(type) {
		case fsm.Batch:
			for _, b := range c.Commands {
				walk(b)
			}
		case fsm.By:
			walk(c.Cmd)
		case fsm.Release:
			n.releases[ackedGrant{c.Key, c.Holder, c.Token}] = true
		case fsm.End:
			if c.Key != "" {
				n.ends[c.Key] = true
			}
		case fsm.GroupPut:
			n.groupPuts[c.Name] = true
		case fsm.GroupPutCAS:
			n.groupPuts[c.Define.Name] = true
		}
	}
	walk(c)
	return nil
}

// replayedWrite reports whether the replayed log holds w's command.
func (n *durNode) replayedWrite(w Write) bool {
	switch w.Op {
	case WriteRelease:
		return n.releases[ackedGrant{w.Key, w.Holder, w.Token}]
	case WriteRevoke:
		return n.ends[w.Key]
	case WriteGroup:
		return n.groupPuts[w.Key]
	}
	return false
}

// snapshotCovers reports whether the restored snapshot m, whose token
// counter is counter, accounts for w's effect.
func snapshotCovers(m *fsm.Machine, counter uint64, w Write) bool {
	if w.Op == WriteGroup {
		return m.Group(w.Key) != nil
	}
	if counter < w.Token {
		return false
	}
	l := m.Get(w.Key)
	switch {
	case l == nil:
		return true // forgotten: only free keys are
	case l.Token > w.Token:
		return true
	case l.Token < w.Token:
		return false
	case !l.Held:
		return true
	}
	return w.Op == WriteRevoke && l.Ending != fsm.ReasonNone
}

// undoes says how the final state m undoes w ("" when it does not).
func undoes(m *fsm.Machine, w Write) string {
	if w.Op == WriteGroup {
		if m.Group(w.Key) == nil {
			return "the group does not exist at the end"
		}
		return ""
	}
	l := m.Get(w.Key)
	if l == nil || !l.Held || l.Token != w.Token {
		return ""
	}
	if w.Op == WriteRelease {
		return fmt.Sprintf("the lease is held by %s under token %d at the end", l.Holder, l.Token)
	}
	if w.Op == WriteRevoke && l.Ending == fsm.ReasonNone {
		return fmt.Sprintf("the lease is held by %s under token %d, not ending, at the end", l.Holder, l.Token)
	}
	return ""
}
