//go:build !tenure_unsafe_plainraft

package nodeconfig

// plainRaftACLs is false in every real build: ACLs need authenticated Raft
// (Config.ValidateRaftAuth). Builds with the tag tenure_unsafe_plainraft
// (a negative control of the fault suite, never a release) set it
// (unsafe_plainraft_on.go).
const plainRaftACLs = false
