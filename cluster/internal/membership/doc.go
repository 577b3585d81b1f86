// Package membership owns who is in a tenure cluster: the server's gossip
// membership (memberlist, its member table and the admission check of
// each announcement), the gossip keyring, and the leader's autopilot that
// admits proven servers to Raft as non-voters, moves, promotes and
// removes them (autopilot.go).
//
// Gossip proves nothing by itself: anyone who reaches the gossip port can
// announce any id and address. So this package must never change the Raft
// configuration on a member's word without proving the member again right
// before (Gossip.ProveAgain), never move a voter as a voter (it is
// demoted first, docs/adr/0026), never take a keyring change from gossip
// (only from the node's API), and never judge a server's health by what
// the server or gossip says: only by the leader's own Raft contacts
// (Config.Contact). It never serves clients, never reads the lease state,
// and never decides who leads.
//
// The node (package cluster) builds it with New and gives it what it
// needs as values in Config: its Raft, its contacts, its admission check,
// memberlist's transport with the node's connection caps, and the rules
// (sizes and durations) of its configuration.
package membership
