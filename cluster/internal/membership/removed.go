package membership

import "time"

// NoteRemoved records that an operator removed server id through this
// node.
func (g *Gossip) NoteRemoved(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.removed[id] = g.now()
}

// ForgetRemoved drops the record of NoteRemoved: an operator readmits id.
func (g *Gossip) ForgetRemoved(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.removed, id)
}

// removedLately reports whether this node removed server id through the
// API within the last minute. The leader does not add such a server back
// even if gossip still announces it as new (its announcement may lag).
func (g *Gossip) removedLately(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	at, ok := g.removed[id]
	if ok && g.now().Sub(at) > time.Minute {
		delete(g.removed, id)
		return false
	}
	return ok
}
