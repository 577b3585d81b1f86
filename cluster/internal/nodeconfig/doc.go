// Package nodeconfig holds the configuration of a cluster node: its
// fields, their defaults, and the checks of each field and of the
// relations between them (Config.Validate), with the connection caps of
// the Raft and gossip ports. Package cluster names them by alias.
//
// It only describes and checks a configuration: it never opens a port, a
// file or a store, and it never starts anything.
package nodeconfig
