package membership

import (
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/raft"
	"github.com/tenure-io/tenure/cluster/internal/rounds"
)

// Who may become a Raft voter, after Consul's autopilot. Gossip proves
// nothing: anyone who reaches the gossip port can announce role=server with
// any id and address. So the leader
//
//  1. admits to Raft only servers that prove they belong to this cluster
//     (Config.ProveServer), and only as non-voters;
//  2. promotes a non-voter to voter only while the cluster has fewer voters
//     than its configured size (Config.Voters), and only once the non-voter
//     has stayed healthy for ServerStabilization: it answers the leader's
//     Raft messages at its configured address, and its log is within
//     MaxCatchUpLag entries of the leader's commit index;
//  3. removes a server that has been dead for DeadServerCleanup: failed or
//     left on gossip and silent to the leader's Raft messages; a voter only
//     while removableDeadVoters allows it;
//  4. moves a known server to the address gossip announces only once the
//     leader has been out of contact with it at its configured address for
//     a few election timeouts (a rescheduled pod with a new IP), never while
//     it answers there (to Raft, or with TLS to a handshake that proves its
//     id, which a restarted server does before Raft reaches it again); and
//     a voter never moves as a voter: it is demoted, comes back as a
//     non-voter at the new address, and is promoted again by rule 2
//     (caught up, proven, stable) or by an operator, so that a voter's
//     slot never follows gossip's word (docs/adr/0026);
//  5. trusts no member for an id that several alive members announce:
//     none of them is admitted or moved while it lasts; a server at its
//     configured address stays there, and is still promoted by rule 2
//     (its address is the configuration's, not gossip's);
//  6. acts on no kept verdict of the admission check: it proves a member
//     again, at once, right before it admits it, moves or demotes a voter
//     for it, or promotes it (ProveAgain), since a Raft address that
//     relays to a live server proves only while that server lives.
//
// The leader's view of a server's health is its own transport's (contacts),
// never what the server or gossip says about itself.

// ErrNotProven: a member that announces itself as a server has not proven
// that it belongs to this cluster. The leader does not admit it to Raft.
var ErrNotProven = errors.New("server not proven to belong to this cluster")

// ClusterNameProof is the default admission check: a server belongs to the
// cluster named name when it announces that name. It proves nothing
// against someone who can reach the gossip port and knows the name; it
// keeps out servers of another cluster started with a wrong -join.
func ClusterNameProof(name string) func(Member) error {
	return func(m Member) error {
		if m.Meta.ClusterName != name {
			return fmt.Errorf("%w: it announces cluster %q, this is %q", ErrNotProven, m.Meta.ClusterName, name)
		}
		return nil
	}
}

// Rules are the sizes and durations of the leader's decisions, from the
// node's configuration.
type Rules struct {
	// Voters is the configured size (Config.Voters); 0: unknown.
	Voters int
	// Stabilization is Config.ServerStabilization; DeadAfter is
	// Config.DeadServerCleanup (0: never remove).
	Stabilization, DeadAfter time.Duration
	// AddressGrace is how long a known server must be out of touch at its
	// configured address before it moves to the one gossip announces.
	AddressGrace time.Duration
	// Recent: a contact at most this old counts as the server being in
	// touch now (a few heartbeat intervals).
	Recent time.Duration
	// CatchUpLag is Config.MaxCatchUpLag.
	CatchUpLag uint64
}

// CaughtUp reports whether the leader heard from a server within Recent,
// and the log the server reported then was within CatchUpLag entries of
// commit.
func (r Rules) CaughtUp(ct rounds.Contact, ok bool, now time.Time, commit uint64) bool {
	return ok && now.Sub(ct.At) <= r.Recent && ct.LastLog+r.CatchUpLag >= commit
}

// removableDeadVoters is how many dead voters the leader may remove from a
// configuration of voters voters, failed of which are out of touch (dead
// or not yet long enough), in a cluster of configured size size (0:
// unknown, taken as voters).
//
// Consul's rule first: only while the failed voters are a minority of the
// voters. Then the live voters are a majority that commits the removal, and
// a leader that sees half of the cluster gone (a partition, not deaths)
// removes nobody. Second, never below a majority of the configured size:
// a cluster of five keeps at least three voters however many cleanups come
// one after the other, so that it can never shrink to a single server that
// a partition would then leave alone in charge. Removal itself is safe for
// quorum (a voter that is gone counts against it either way); these rules
// keep the cluster's size from drifting down on a flaky view.
func removableDeadVoters(voters, failed, size int) int {
	if failed <= 0 || 2*failed >= voters {
		return 0
	}
	if size <= 0 {
		// The configured size is unknown (this leader was started with
		// neither -bootstrap-expect nor -initial-cluster): sizing on the
		// voters left would let successive cleanups shrink the cluster
		// below a majority of what it was, so no voter is removed.
		return 0
	}
	return max(0, min(failed, voters-(size/2+1)))
}

// pilot is what the leader remembers between reconciliations: when this
// term's leadership was first seen (contacts older than it say nothing),
// since when each non-voter has been healthy, and what it has already
// logged about each member.
type pilot struct {
	term         uint64
	leaderSince  time.Time
	healthySince map[raft.ServerID]time.Time
	logged       map[string]string // member name → last message
}

func newPilot() pilot {
	return pilot{healthySince: map[raft.ServerID]time.Time{}, logged: map[string]string{}}
}

// distrusts returns why m, an alive server member, cannot be trusted yet,
// and logs it as msg: its id is announced by several alive members (dup
// counts them; errAnnouncedTwice), or its identity proof failed, or has
// not been checked yet (errUnchecked, not logged). nil: m is trusted.
func (g *Gossip) distrusts(m Member, dup map[string]int, msg string) error {
	err := m.proof
	if dup[m.Meta.ID] > 1 {
		err = fmt.Errorf("%d alive gossip members announce server id %s: %w", dup[m.Meta.ID], m.Meta.ID, errAnnouncedTwice)
	}
	if err != nil && err != errUnchecked {
		g.logOnce(m.Name, msg, err)
	}
	return err
}

// logOnce logs msg about the member named name (or "raft:" and a server
// id), unless it is what was last logged about it.
func (g *Gossip) logOnce(name, msg string, err error) {
	line := msg + ": " + err.Error()
	if g.pilot.logged[name] == line {
		return
	}
	g.pilot.logged[name] = line
	g.cfg.Log.Warn(msg, "member", name, "error", err)
}

// reconcile brings the Raft configuration in line with gossip, on the
// established leader: admit, clean up, promote. Each step reads the
// configuration afresh; a change that fails is tried again next time.
func (g *Gossip) reconcile() {
	now := g.now()
	if term := g.cfg.Raft.CurrentTerm(); term != g.pilot.term {
		g.pilot = newPilot()
		g.pilot.term, g.pilot.leaderSince = term, now
	}
	members := g.Members()
	listed := map[string]bool{}
	for _, m := range members {
		listed[m.Name] = true
	}
	maps.DeleteFunc(g.pilot.logged, func(name, _ string) bool { return !listed[name] && !strings.HasPrefix(name, "raft:") })
	if servers, ok := g.configuration(); ok {
		g.admit(servers, members, now)
	}
	if servers, ok := g.configuration(); ok && g.cfg.Rules.DeadAfter > 0 {
		g.removeDead(servers, now)
	}
	if servers, ok := g.configuration(); ok {
		g.promote(servers, members, now)
	}
}

func (g *Gossip) configuration() ([]raft.Server, bool) {
	f := g.cfg.Raft.GetConfiguration()
	if err := f.Error(); err != nil {
		g.cfg.Log.Warn("reading the raft configuration failed", "error", err)
		return nil, false
	}
	return f.Configuration().Servers, true
}

// silentFor is how long the leader has had no answer from srv at its
// configured address, counting from this term's leadership at most.
func (g *Gossip) silentFor(srv raft.Server, now time.Time) time.Duration {
	last := g.pilot.leaderSince
	if ct, ok := g.cfg.Contact(srv.ID, srv.Address); ok && ct.At.After(last) {
		last = ct.At
	}
	return now.Sub(last)
}

// admit adds the alive, proven servers that are new as non-voters, and
// moves a known server to its announced address once it has been silent
// at the old one for addressGrace. It never adds a server that has Raft
// state, so a server that was removed stays out, alive or not, until it
// is started again with an empty data dir; and it never adds one an
// operator removed through this node lately (its announcement may lag).
func (g *Gossip) admit(servers []raft.Server, members []Member, now time.Time) {
	known := make(map[raft.ServerID]raft.Server, len(servers))
	voters := 0
	for _, s := range servers {
		known[s.ID] = s
		if s.Suffrage == raft.Voter {
			voters++
		}
	}
	dup := AnnouncedTwice(members)
	for _, m := range members {
		if m.Meta.Role != "server" || m.Status != "alive" || m.Meta.RaftAddr == "" || m.Meta.ID == g.cfg.Self.ID {
			continue
		}
		if g.distrusts(m, dup, "server not admitted to raft") != nil {
			continue
		}
		if g.removedLately(m.Meta.ID) {
			continue
		}
		id, addr := raft.ServerID(m.Meta.ID), raft.ServerAddress(m.Meta.RaftAddr)
		srv, isKnown := known[id]
		switch {
		case isKnown && srv.Address == addr:
			continue // nothing to do
		case isKnown:
			if silent := g.silentFor(srv, now); silent < g.cfg.Rules.AddressGrace {
				g.logOnce(m.Name, "server address not changed", fmt.Errorf(
					"server %s announces raft address %s, but answered at %s %v ago", id, addr, srv.Address, silent.Round(time.Millisecond)))
				continue
			}
		case m.Meta.Bootstrapped:
			continue // has Raft state but was removed: stays out
		}
		demotes := isKnown && srv.Suffrage == raft.Voter && !g.cfg.MovesVoters
		if keep := g.cfg.Rules.Voters/2 + 1; demotes && (g.cfg.Rules.Voters == 0 || voters-1 < keep) {
			// Demoting a silent voter takes nothing from the quorum that
			// it gave, but the voters left must stay a majority of the
			// configured size.
			g.logOnce(m.Name, "server address not changed", fmt.Errorf(
				"voter %s announces raft address %s, but demoting it would leave %d voters of a configured %d (an operator may remove it: tenure operator remove-server %s)",
				id, addr, voters-1, g.cfg.Rules.Voters, id))
			continue
		}
		// A server that proves its id at its configured address now
		// stays there, however long the leader's own Raft messages took
		// to reach it again (a restart): a member announcing it
		// elsewhere is at best a relay to it.
		if isKnown && g.cfg.AnswersAt != nil {
			if err := g.cfg.AnswersAt(string(id), string(srv.Address)); err == nil {
				g.logOnce(m.Name, "server address not changed", fmt.Errorf(
					"server %s announces raft address %s, but proves its id at %s now", id, addr, srv.Address))
				continue
			}
		}
		// The kept verdict may be stale (a relay to a voter that has
		// since gone down): prove the member again before acting on it.
		if err := g.ProveAgain(m); err != nil {
			g.logOnce(m.Name, "server not admitted to raft", err)
			continue
		}
		var err error
		demoted := false
		switch {
		case isKnown && srv.Suffrage == raft.Voter && g.cfg.MovesVoters:
			err = g.cfg.Raft.AddVoter(id, addr, 0, 10*time.Second).Error() // moves it, as a voter
		case demotes:
			// Raft's AddNonvoter on a voter would move it and keep it a
			// voter: demote it first.
			if err = g.cfg.Raft.DemoteVoter(id, 0, 10*time.Second).Error(); err == nil {
				voters--
				demoted = true
				err = g.cfg.Raft.AddNonvoter(id, addr, 0, 10*time.Second).Error()
			}
		default:
			err = g.cfg.Raft.AddNonvoter(id, addr, 0, 10*time.Second).Error()
		}
		if err != nil {
			g.cfg.Log.Warn("adding server failed", "server_id", id, "error", err)
			continue
		}
		if isKnown {
			g.cfg.Log.Info("server address changed", "server_id", id, "raft_addr", addr, "old_raft_addr", srv.Address, "demoted", demoted)
		} else {
			g.cfg.Log.Info("server added", "server_id", id, "raft_addr", addr, "voter", false)
		}
	}
}

// deadFor is how long server id has been dead: failed or left on gossip
// (every member announcing that id; one that gossip has forgotten counts
// from this term's leadership) and silent to this leader. 0 while either
// says it lives.
func (g *Gossip) deadFor(srv raft.Server, now time.Time) time.Duration {
	alive, since := g.serverStatus(string(srv.ID))
	if alive {
		return 0
	}
	if since.Before(g.pilot.leaderSince) {
		since = g.pilot.leaderSince
	}
	return min(now.Sub(since), g.silentFor(srv, now))
}

// serverStatus reports whether a member announcing server id is alive on
// gossip and, if none is, since when the last of them has been dead (the
// zero time when gossip lists none).
func (g *Gossip) serverStatus(id string) (alive bool, deadSince time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, e := range g.members {
		if e.member.Meta.Role != "server" || e.member.Meta.ID != id {
			continue
		}
		if e.member.Status == "alive" && e.member.proof == nil {
			return true, time.Time{}
		}
		if e.since.After(deadSince) {
			deadSince = e.since
		}
	}
	return false, deadSince
}

// removeDead removes the servers that have been dead for deadAfter: every
// such non-voter, and as many such voters as removableDeadVoters allows,
// in id order.
func (g *Gossip) removeDead(servers []raft.Server, now time.Time) {
	voters, failed := 0, 0
	var deadVoters []raft.Server
	for _, s := range servers {
		if s.Suffrage == raft.Voter {
			voters++
		}
		if s.ID == raft.ServerID(g.cfg.Self.ID) {
			continue
		}
		dead := g.deadFor(s, now)
		switch {
		case dead >= g.cfg.Rules.DeadAfter && s.Suffrage != raft.Voter:
			g.remove(s, dead, "dead non-voter")
		case s.Suffrage != raft.Voter:
		case dead >= g.cfg.Rules.DeadAfter:
			deadVoters = append(deadVoters, s)
			failed++
		case dead > 0 || g.silentFor(s, now) >= g.cfg.Rules.AddressGrace:
			failed++ // out of touch, not yet for long enough
		}
	}
	n := removableDeadVoters(voters, failed, g.cfg.Rules.Voters)
	if n < len(deadVoters) {
		g.logOnce("raft:"+string(deadVoters[n].ID), "dead voter kept", fmt.Errorf(
			"%d of %d voters are failed and the configured size is %d: removing more would leave too few", failed, voters, g.cfg.Rules.Voters))
	}
	for _, s := range deadVoters[:min(n, len(deadVoters))] {
		g.remove(s, g.deadFor(s, now), "dead voter")
	}
}

func (g *Gossip) remove(s raft.Server, dead time.Duration, what string) {
	if err := g.cfg.Raft.RemoveServer(s.ID, 0, 10*time.Second).Error(); err != nil {
		g.cfg.Log.Warn("removing "+what+" failed", "server_id", s.ID, "error", err)
		return
	}
	g.cfg.Log.Info(what+" removed", "server_id", s.ID, "raft_addr", s.Address, "dead_for", dead.Round(time.Second))
}

// promote makes voters of the healthy non-voters, longest healthy first,
// while the cluster has fewer voters than its configured size. A non-voter
// must be announced alive on gossip by a proven member at its configured
// address, not have asked to stay a non-voter (-non-voter), and have been
// healthy (caughtUp) for stabilization.
func (g *Gossip) promote(servers []raft.Server, members []Member, now time.Time) {
	commit := g.cfg.Raft.CommitIndex()
	voters := 0
	inConfig := map[raft.ServerID]bool{}
	var candidates []raft.Server
	for _, s := range servers {
		inConfig[s.ID] = true
		if s.Suffrage == raft.Voter {
			voters++
			continue
		}
		ct, ok := g.cfg.Contact(s.ID, s.Address)
		if !g.cfg.Rules.CaughtUp(ct, ok, now, commit) {
			delete(g.pilot.healthySince, s.ID)
			continue
		}
		if _, ok := g.pilot.healthySince[s.ID]; !ok {
			g.pilot.healthySince[s.ID] = now
		}
		candidates = append(candidates, s)
	}
	maps.DeleteFunc(g.pilot.healthySince, func(id raft.ServerID, _ time.Time) bool { return !inConfig[id] })
	sort.Slice(candidates, func(i, j int) bool {
		a, b := g.pilot.healthySince[candidates[i].ID], g.pilot.healthySince[candidates[j].ID]
		if !a.Equal(b) {
			return a.Before(b)
		}
		return candidates[i].ID < candidates[j].ID
	})
	for _, s := range candidates {
		if voters >= g.cfg.Rules.Voters {
			return
		}
		if now.Sub(g.pilot.healthySince[s.ID]) < g.cfg.Rules.Stabilization {
			continue
		}
		m, ok := announcer(members, s)
		if !ok {
			continue
		}
		if err := g.ProveAgain(m); err != nil {
			g.logOnce(m.Name, "server not promoted", err)
			continue
		}
		if err := g.cfg.Raft.AddVoter(s.ID, s.Address, 0, 10*time.Second).Error(); err != nil {
			g.cfg.Log.Warn("promoting server failed", "server_id", s.ID, "error", err)
			continue
		}
		voters++
		g.cfg.Log.Info("server promoted", "server_id", s.ID, "raft_addr", s.Address, "voters", voters, "configured_voters", g.cfg.Rules.Voters)
	}
}

// announcer is a proven, alive member that announces s at its configured
// address, unless one that does asks to stay a non-voter (-non-voter).
// Members that announce s's id at another address (a forged one, a relay)
// do not stand in the way: the address is the configuration's, not
// gossip's, the leader has heard s there (caughtUp), and it proves the
// member again before promoting it (ProveAgain).
func announcer(members []Member, s raft.Server) (Member, bool) {
	var found Member
	ok := false
	for _, m := range members {
		if m.Meta.Role != "server" || m.Status != "alive" || m.Meta.ID != string(s.ID) || m.Meta.RaftAddr != string(s.Address) {
			continue
		}
		if m.Meta.NonVoter {
			return Member{}, false
		}
		if m.proof == nil && !ok {
			found, ok = m, true
		}
	}
	return found, ok
}

// AnnouncedTwice counts the alive members that announce each server id;
// an id with a count above one is trusted for nothing that needs an
// address (a forged member announcing a real server's id, proven or not).
func AnnouncedTwice(members []Member) map[string]int {
	n := map[string]int{}
	for _, m := range members {
		if m.Meta.Role == "server" && m.Status == "alive" {
			n[m.Meta.ID]++
		}
	}
	return n
}
