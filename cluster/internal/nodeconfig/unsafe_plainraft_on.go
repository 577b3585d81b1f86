//go:build tenure_unsafe_plainraft

package nodeconfig

// plainRaftACLs, in this build, lets ACLs start on a plain Raft port, as
// builds before the check did: a deliberate hole, the negative control
// that the fault suite must catch (a forged AppendEntries commits what it
// carries). Never built into a release.
const plainRaftACLs = true

func init() {
	println("WARNING: server built with tenure_unsafe_plainraft: ACLs start with Raft on plain TCP, which anyone who reaches the port can write to")
}
