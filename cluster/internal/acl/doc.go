// Package acl decides what a request may do while ACLs are on.
//
// It owns the Authorizer (the rights of one token, or of no token under
// the default policy, on the names of keys, groups and workers), the
// checks of a policy's rules, the making of tokens and their secrets'
// hashes, the admission of a worker to the keys of a group, and the ACL
// calls of a node (Calls: tokens and policies, behind the node's read
// barrier and proposer, given as a Node).
//
// It reads tokens, policies and worker registrations from the replicated
// state it is given, and never writes them itself: creating a token or a
// policy is a command that the node proposes through Raft (Node.Write). It must never store a
// token's secret, only its hash.
package acl
