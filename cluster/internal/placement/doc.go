// Package placement decides which worker should own each key of a group.
//
// It holds the planner (place: bounded-load rendezvous hashing that starts
// from the previous plan), the leader's Balancer, which writes a group's
// plan and its stuck workers through Raft when they change, and the
// Tracker of stuck workers: live workers that do not take the keys the
// plan targets at them. The Balancer and the Tracker keep time on the
// injected Clock; the planner is a pure function of its inputs.
//
// A plan is intent only. This package must never acquire, release or
// revoke a lease, nor read gossip itself: it is given the live workers and
// a way to submit commands, and what it writes is the plan.
package placement
