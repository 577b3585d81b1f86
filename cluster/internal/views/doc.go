// Package views computes what an operator reads of groups and workers.
//
// Its functions build the views of the API (a group with its keys'
// targets, holders and controls; a page of a group's plan; the workers
// with their keys) from the replicated state machine and the gossip
// members they are given, and answer whether anything knows a key or a
// worker. It declares the shapes of a node's status and health reports
// (Status, NodeHealth), which the node fills in.
//
// It only reads: it must never write to the state machine, propose a
// command, wait for a read barrier (the caller does) or read gossip itself.
package views
